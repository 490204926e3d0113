#!/usr/bin/env python3
# CTest driver of the Hugging Face reference test: hf_reference.py writes tiny
# checkpoints and expectations to a temp dir, hf_reference_check compares Plimsoll.
"""Usage: run_reference.py PATH_TO_hf_reference_check

Runs hf_reference.py on Debian's /usr/bin/python3 (python3-torch, installed by
scripts/install-deps), else on this Python. Exit 77 (reported by CTest as not
run) when neither has torch, or 1 when PLIMSOLL_REQUIRE_TORCH=1 (scripts/test
sets it, so CI cannot skip the oracle silently).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INSTALL_HINT = ("install Debian's PyTorch with `scripts/install-deps` or "
                "`apt-get install python3-torch python3-numpy` (about 950 MiB installed, ~3 min)")


def python_with_torch():
    """Debian's /usr/bin/python3 (a pyenv python3 without torch may come first on PATH), else sys.executable."""
    for exe in dict.fromkeys(["/usr/bin/python3", sys.executable]):
        if os.path.exists(exe) and subprocess.run([exe, "-c", "import torch"],
                                                  capture_output=True).returncode == 0:
            return exe
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    exe = python_with_torch()
    if exe is None:
        if os.environ.get("PLIMSOLL_REQUIRE_TORCH") == "1":
            print("hf reference test FAILED: PLIMSOLL_REQUIRE_TORCH=1 but no python3 with torch; " + INSTALL_HINT)
            return 1
        print("hf reference test NOT RUN: no python3 with torch found; " + INSTALL_HINT)
        return 77
    print("hf reference: %s" % exe, flush=True)
    with tempfile.TemporaryDirectory(prefix="plimsoll-hf-ref-") as tmp:
        made = subprocess.run([exe, os.path.join(HERE, "hf_reference.py"), tmp])
        if made.returncode != 0:
            print("hf_reference.py failed", file=sys.stderr)
            return 1
        return subprocess.run([sys.argv[1], tmp]).returncode


if __name__ == "__main__":
    sys.exit(main())
