"""Runs one system-test module with unittest; exits 77 (CTest's 'skipped')
when every test in it was skipped, so a skip is never counted as a pass."""

import importlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    module = importlib.import_module(sys.argv[1])
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    ran = result.testsRun - len(result.skipped)
    # A test with failing subtests appears once per failing subtest: count tests.
    failed = len({getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors})
    print("%d passed, %d failed, %d skipped" % (ran - failed, failed, len(result.skipped)))
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun and ran == 0:
        sys.exit(77)


if __name__ == "__main__":
    main()
