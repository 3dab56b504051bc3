#!/usr/bin/env python3
"""The README's option table, generated from core/options.inc (the one list).

  tools/options_table.py --write README.md    # replace the table between the markers
  tools/options_table.py --check README.md    # exit 1 if the README table is stale
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"
ROW = re.compile(r'^TG_OPTION\(\s*(\w+),\s*(\w+(?:\([^)]*\))?),\s*"([^"]*)",\s*"((?:[^"\\]|\\.)*)"\)', re.M)


def table():
    text = open(os.path.join(ROOT, "core/options.inc")).read()
    kinds = {"MODE": "detect, serialize, off", "DEADLOCK": "proceed, abort", "WAITEND": "proceed, wait", "BOOL": "0, 1", "STRING": "text"}
    lines = ["| option | values | default | meaning |", "| --- | --- | --- | --- |"]
    for name, kind, default, helptext in ROW.findall(text):
        m = re.match(r"INT\((-?\d+),\s*(-?\d+)\)", kind)
        values = f"{m.group(1)} to {m.group(2)}" if m else kinds.get(kind, kind)
        lines.append(f"| `{name}` | {values} | {('`' + default + '`') if default else ''} | {helptext.replace('|', '/').replace('<', '&lt;').replace('>', '&gt;')} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write")
    g.add_argument("--check")
    a = ap.parse_args()
    path = a.write or a.check
    readme = open(path).read()
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{table()}{END}{tail}"
    if a.write:
        open(path, "w").write(new)
        return 0
    if new != readme:
        print("options_table: README.md's option table differs from core/options.inc; run tools/options_table.py --write",
              file=sys.stderr)
        return 1
    print("options_table: README.md's option table matches core/options.inc")
    return 0


if __name__ == "__main__":
    sys.exit(main())
