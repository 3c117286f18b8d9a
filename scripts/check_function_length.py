#!/usr/bin/python3
"""Fails when a function in the given directories is longer than --max lines (issue 9: no function
over about 80 lines in src/, collectives/ or ranks/). A brace scanner, not a parser: a definition
starts at a line ending in ') {' (optionally const/noexcept/override/-> T/initializer list) outside
any other definition, and ends at its matching brace; comments and literals are blanked first.

usage: check_function_length.py [--max N] [--debt FILE] DIR...
--debt FILE lists the long functions still to be split, one line per file: "PATH COUNT LONGEST". A
file may have at most COUNT functions over the limit, none longer than LONGEST; a file that now has
fewer fails too, so that the list only shrinks.
"""
import argparse
import os
import re
import sys

HEADER = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->\s*[\w:<>,\s*&]+)?\{\s*$")
NOT_FUNCTION = re.compile(r"^\s*(\}\s*)?(if|for|while|switch|else|do|catch|namespace)\b|=\s*\[|\bstruct\b|\bclass\b")


def blank(line, state):
    """The line with comments and string/char literals blanked; state carries /* */ across lines."""
    out, i = [], 0
    while i < len(line):
        if state["block"]:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out)
            state["block"], i = False, end + 2
            continue
        two = line[i:i + 2]
        if two == "//":
            break
        if two == "/*":
            state["block"], i = True, i + 2
            continue
        c = line[i]
        if c in "\"'":
            j = i + 1
            while j < len(line) and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    state = {"block": False}
    depth, start, start_depth, name = 0, None, 0, ""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for n, raw in enumerate(lines):
        code = blank(raw, state)
        if start is None and HEADER.search(code) and not NOT_FUNCTION.search(code) and not code.lstrip().startswith("#"):
            start, start_depth, name = n, depth, raw.strip()
        for ch in code:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if start is not None and depth == start_depth:
                    yield start + 1, n - start + 1, name
                    start = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=80)
    ap.add_argument("--debt")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    debt = {}
    if a.debt:
        for line in open(a.debt):
            if line.strip() and not line.startswith("#"):
                path, count, longest = line.split()
                debt[path] = (int(count), int(longest))
    long_ones = []
    for d in a.dirs:
        for root, _, files in os.walk(d):
            for fn in sorted(files):
                if fn.endswith((".cpp", ".hpp")):
                    p = os.path.join(root, fn)
                    long_ones += [(n, p, line, name) for line, n, name in functions(p) if n > a.max]
    by_file = {}
    for n, p, line, name in long_ones:
        by_file.setdefault(os.path.normpath(p), []).append((n, line, name))
    bad = 0
    for p in sorted(set(by_file) | set(debt)):
        found = sorted(by_file.get(p, []), reverse=True)
        count, longest = debt.get(p, (0, 0))
        if len(found) > count or (found and found[0][0] > longest):
            for n, line, name in found:
                print(f"{p}:{line}: {n} lines (over {a.max}): {name[:90]}")
            bad += 1
        elif len(found) < count or (found and found[0][0] < longest):
            print(f"{p}: debt listed as {count} functions up to {longest} lines, now {len(found)}"
                  f"{' up to ' + str(found[0][0]) if found else ''}: lower it in {a.debt}")
            bad += 1
    if bad:
        print(f"{bad} files break the function length rule", file=sys.stderr)
        return 1
    print(f"no function over {a.max} lines beyond the listed debt ({sum(c for c, _ in debt.values())} functions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
