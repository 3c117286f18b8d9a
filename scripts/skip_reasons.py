#!/usr/bin/python3
"""Prints why each skipped test was skipped (ctest itself prints only "Skipped"): from ctest's
Testing/Temporary/LastTest.log, a line per skipped test with the reason its output gave.

  scripts/skip_reasons.py BUILD/Testing/Temporary/LastTest.log
"""
import re
import sys


def blocks(text):
    """(name, output, result) per test in the log."""
    for m in re.finditer(r'\n\d+/\d+ Test: (\S+)\n.*?Output:\n-+\n(.*?)<end of output>\n(.*?)\n"', text, re.S):
        yield m.group(1), m.group(2), m.group(3)


def reason(output):
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if line.endswith(": Skipped") and i + 1 < len(lines):  # GTEST_SKIP: the message follows
            return lines[i + 1]
    for line in lines:
        if re.match(r"(?i)^(skip|skipped)\b", line) and "[  SKIPPED ]" not in line:
            return line
    return "(no reason printed)"


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        text = open(argv[1], errors="replace").read()
    except OSError as e:
        print(f"skip_reasons: {argv[1]}: {e.strerror}", file=sys.stderr)
        return 2
    skipped = [(name, reason(out)) for name, out, result in blocks(text)
               if "Skipped" in result or "[  SKIPPED ]" in out]
    for name, why in skipped:
        print(f"skipped: {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
