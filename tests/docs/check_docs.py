#!/usr/bin/env python3
"""Checks of the docs, run by ctest.

  check_docs.py tables ROOT          docs.tables: no markdown table cell over 300 characters in
                                     ROOT/docs/*.md and ROOT/README.md, docs/benchmarks.md under 25 KB
  check_docs.py flags ROOT BINARY    docs.flags: ROOT/docs/flags.md is what BINARY (flags_markdown,
                                     built from serve's settings table) prints
"""
import difflib
import pathlib
import re
import subprocess
import sys

MAX_CELL = 300
MAX_BENCHMARKS_BYTES = 25 * 1024


def table_cells(line):
    """The cells of a markdown table row (split on unescaped pipes), or [] for other lines."""
    s = line.strip()
    if not s.startswith("|"):
        return []
    cells = re.split(r"(?<!\\)\|", s)[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        cells = cells[:-1]
    return [c.strip() for c in cells]


def check_tables(root):
    files = sorted((root / "docs").glob("*.md")) + [root / "README.md"]
    problems = []
    for path in files:
        fenced = False
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            for cell in table_cells(line):
                if len(cell) > MAX_CELL:
                    problems.append(f"{path.relative_to(root)}:{n}: table cell of {len(cell)} characters "
                                    f"(at most {MAX_CELL}): {cell[:60]}...")
    bench = root / "docs" / "benchmarks.md"
    size = bench.stat().st_size
    if size > MAX_BENCHMARKS_BYTES:
        problems.append(f"docs/benchmarks.md: {size} bytes (at most {MAX_BENCHMARKS_BYTES}): current figures "
                        "only, history belongs in git")
    for p in problems:
        print(p)
    if not problems:
        print(f"docs.tables: {len(files)} files, every table cell <= {MAX_CELL} characters, "
              f"docs/benchmarks.md {size} bytes")
    return 1 if problems else 0


def check_flags(root, binary):
    want = subprocess.run([binary], check=True, capture_output=True, text=True).stdout
    doc = root / "docs" / "flags.md"
    have = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if have == want:
        print("docs.flags: docs/flags.md matches serve's settings table")
        return 0
    sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                               "docs/flags.md", "settings table"))
    print(f"\ndocs/flags.md differs from serve's settings table. Regenerate it from the repository root:\n"
          f"  {binary} > docs/flags.md")
    return 1


def main(argv):
    if len(argv) == 3 and argv[1] == "tables":
        return check_tables(pathlib.Path(argv[2]))
    if len(argv) == 4 and argv[1] == "flags":
        return check_flags(pathlib.Path(argv[2]), argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
