"""Real clients nobody here wrote (tests/sdk: the npm `openai` SDK,
`@huggingface/inference` and LangChain JS) against `plimsoll serve` on
stories260K, run by node's test runner: sdk.test.js, structured.test.js and
generic_tools.test.js (tools on a template without tool syntax; tools.test.js
needs a template with tool calls: test_tools.py runs it)."""

import os
import re
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
            r = subprocess.run(["node", "--test", "sdk.test.js", "structured.test.js", "generic_tools.test.js"], cwd=SDK, env=dict(os.environ, PLIMSOLL_URL=server.url),
                               capture_output=True, text=True, timeout=300)
            print(r.stdout[-1500:])
            self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr[-2000:])
            tests = re.search(r"^# tests (\d+)$", r.stdout, re.M)
            self.assertTrue(tests and int(tests.group(1)) > 0, r.stdout[-1500:])
            self.assertIn("# pass %s\n" % tests.group(1), r.stdout)  # none skipped
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
