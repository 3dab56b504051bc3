#!/usr/bin/env python3
"""Preload integration tests for libtunerguard.so.

    run_all.py --lib build/libtunerguard.so --python ~/.pyenv/versions/3.12.1/bin/python [--only race,fork]
    run_all.py --lib build/libtunerguard.so --python none --only nonpython
    run_all.py --groups | --list

A group is a folder cases/<group>/: its checks.py lists the checks (CHECKS),
each a function of the context that runs its program (a file beside it, or a
string it builds) and states what must hold.  harness.py runs the children.

Prints one line per check (PASS/FAIL/SKIP), exits 0 when all passed, 1 when
any failed, 77 when the interpreter is not installed (ctest SKIP_RETURN_CODE).
"""
import argparse
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "free_threaded"))

from harness import SKIP, Ctx, Fail  # noqa: E402
from regime import Regime, add_argument as add_regime_argument  # noqa: E402


def group_names():
    return sorted(g for g in os.listdir(CASES) if os.path.isfile(os.path.join(CASES, g, "checks.py")))


def group_checks(group):
    spec = importlib.util.spec_from_file_location("cases_" + group, os.path.join(CASES, group, "checks.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CHECKS


def check_name(group, check):
    return "%s/%s" % (group, check.__name__[len("check_"):])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", help="interpreter path, or 'none' for the nonpython group")
    ap.add_argument("--lib")
    ap.add_argument("--fakecuda", help="directory of the stand-in libcuda.so.1 (checks that park a thread in a CUDA call; default: tests/fakecuda beside --lib, where it is)")
    ap.add_argument("--only", default="", help="comma-separated groups (default: all)")
    ap.add_argument("--keep", action="store_true", help="keep temporary directories")
    ap.add_argument("--groups", action="store_true", help="print the group names and exit")
    ap.add_argument("--list", action="store_true", help="print the check names and exit")
    add_regime_argument(ap)
    a = ap.parse_args()
    known = group_names()
    if a.groups:
        print("\n".join(known))
        return 0
    groups = [g for g in a.only.split(",") if g] or known
    for g in groups:
        if g not in known:
            ap.error("unknown group %s (known: %s)" % (g, ", ".join(known)))
    if a.list:
        for g in groups:
            for check in group_checks(g):
                print(check_name(g, check))
        return 0
    if not a.python or not a.lib:
        ap.error("--python and --lib are required")
    if os.environ.get("LD_PRELOAD", "") and "tunerguard" in os.environ["LD_PRELOAD"]:
        print("the driver itself must not run under the preload")
        return 1
    if not os.path.exists(a.lib):
        print("FAIL: %s does not exist" % a.lib)
        return 1
    a.lib = os.path.abspath(a.lib)
    needs_python = any(g != "nonpython" for g in groups)
    if needs_python and not (os.path.isfile(a.python) and os.access(a.python, os.X_OK)):
        print("SKIP: interpreter %s not installed" % a.python)
        return SKIP
    regime = Regime(a.gil_regime)
    why = regime.check_interpreter(a.python)
    if why:
        print("FAIL: %s" % why)
        return 1
    fakecuda = a.fakecuda
    if not fakecuda:
        # beside the library, as in a build folder and in the installed package
        # (tunerguard/tests/fakecuda): the pip tests run the suite that way
        near = os.path.join(os.path.dirname(os.path.abspath(a.lib)), "tests", "fakecuda")
        fakecuda = near if os.path.exists(os.path.join(near, "libcuda.so.1")) else None
    ctx = Ctx(a.python, a.lib, a.keep, regime, fakecuda=fakecuda and os.path.abspath(fakecuda))
    label = "" if a.python == "none" else " [%s]" % a.python
    failed = 0
    for g in groups:
        for check in group_checks(g):
            name = check_name(g, check)
            try:
                check(ctx)
                print("PASS %s%s" % (name, label), flush=True)
            except Fail as e:
                failed += 1
                print("FAIL %s%s: %s" % (name, label, e), flush=True)
    ctx.cleanup()
    held, said = regime.verify()
    if said:
        print("%s %s" % ("PASS" if held else "FAIL", said))
    return 1 if failed or not held else 0


if __name__ == "__main__":
    sys.exit(main())
