#!/usr/bin/env python3
"""tools/skipped_tests.py JUNIT: after ctest (--output-junit JUNIT), list every test that
did not run, with the reason its driver gave (its last "SKIP:" line, else ctest's), in
one block that CI's log shows after the run.

Exit status: 0, the block printed or not; 1 when some did not run and TG_STRICT_SKIPS=1
(a test the matrix claims, an interpreter or a Triton release, that this machine could
not run is then not a pass); 2 no such file.  A test whose reason is "SKIP (expected): ..."
(an interpreter that cannot be had anywhere yet, such as a free-threaded 3.14: the test
is written for the day it is) is listed apart and never fails the run.
"""
import os
import sys
import xml.etree.ElementTree as ET


def reason(case):
    out = case.findtext("system-out") or ""
    said = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("SKIP")]
    if said:
        return said[-1]
    s = case.find("skipped")
    return (s.get("message") if s is not None else None) or (out.strip().splitlines() or ["no reason given"])[-1]


def main():
    if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]):
        sys.stderr.write("usage: tools/skipped_tests.py CTEST_JUNIT_XML (from ctest --output-junit)\n")
        return 2
    cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
    every = [(c.get("name"), reason(c)) for c in cases if c.get("status") in ("notrun", "disabled")]
    expected = [(n, why) for n, why in every if why.startswith("SKIP (expected)")]
    skipped = [(n, why) for n, why in every if not why.startswith("SKIP (expected)")]
    if expected:
        print("Expected to be skipped here (written for what this machine cannot have):")
        for name, why in expected:
            print(f"  {name}  {why}")
    if not skipped:
        print("tools/dev test: every test ran (none skipped" + (" but the expected ones)" if expected else ")"))
        return 0
    strict = os.environ.get("TG_STRICT_SKIPS") == "1"
    bar = "=" * 78
    print(bar)
    print(f"SKIPPED: {len(skipped)} test(s) did not run on this machine:")
    width = max(len(n) for n, _ in skipped)
    for name, why in skipped:
        print(f"  {name:<{width}}  {why}")
    print("What they need: the interpreters in ~/.pyenv/versions (tests/CMakeLists.txt, TG_PYTHONS), the")
    print("Triton venvs of tools/triton_releases.sh make (needs the Python package index), the Debian roots")
    print("and auditwheel's venv that tools/dev test makes (root; Debian's mirror, the package index);")
    print("*/3.13t-* and free-threaded/3.13t: the free-threaded CPython that tools/dev py313t builds (test makes it;")
    print("the tools/dev line above says why it could not), and Triton 3.4.0's cp313t venv made from it.")
    print("TG_STRICT_SKIPS=1: tools/dev test fails on them." if strict else
          "They are not passes: TG_STRICT_SKIPS=1 makes tools/dev test fail on them.")
    print(bar)
    return 1 if strict else 0


if __name__ == "__main__":
    sys.exit(main())
