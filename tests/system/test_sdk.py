"""Real clients nobody here wrote (tests/sdk: the npm `openai` SDK and
`@huggingface/inference`) against `plimsoll serve`, run by node's test runner."""

import os
import subprocess
import unittest

from server import REPO, Server

SDK = os.path.join(REPO, "tests", "sdk")


class SdkTest(unittest.TestCase):
    def test_npm_clients(self):
        self.assertTrue(os.path.isdir(os.path.join(SDK, "node_modules")),
                        "tests/sdk/node_modules is missing: run scripts/install-deps (npm ci --prefix tests/sdk)")
        server = Server("--memory-limit", "256Mi")
        try:
            r = subprocess.run(["node", "--test"], cwd=SDK, env=dict(os.environ, PLIMSOLL_URL=server.url),
                               capture_output=True, text=True, timeout=300)
            print(r.stdout[-1500:])
            self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr[-2000:])
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
