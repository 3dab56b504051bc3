#!/usr/bin/env python3
"""Run run_repro.py for a scenario that reads a released package's file from its
wheel, or skip, saying why, when the wheel is not in the wheel cache.

  run_wheel_repro.py WHEEL ENV_VAR [run_repro.py arguments...]

WHEEL is the wheel's file name; the cache is $TG_WHEEL_CACHE, else
$XDG_CACHE_HOME/tunerguard/wheels, else ~/.cache/tunerguard/wheels (tools/dev build
fetches the wheels there).  When the wheel is there, ENV_VAR=<its path> is set for
run_repro.py and its children.  Exit status: run_repro.py's; 77 (ctest's
SKIP_RETURN_CODE) with one line when the wheel is absent; 2 on a usage error.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def wheel_cache():
    if os.environ.get("TG_WHEEL_CACHE"):
        return os.environ["TG_WHEEL_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tunerguard", "wheels")


def main(argv):
    if len(argv) < 3 or not argv[1].endswith(".whl") or not argv[2].isidentifier():
        sys.stderr.write("usage: run_wheel_repro.py WHEEL.whl ENV_VAR [run_repro.py arguments...]\n")
        return 2
    path = os.path.join(wheel_cache(), argv[1])
    if not os.path.isfile(path):
        sys.stderr.write(f"run_wheel_repro: SKIPPED: {argv[1]} is not in {wheel_cache()} "
                         "(tools/dev build fetches it; TG_WHEEL_CACHE names another folder)\n")
        return 77
    os.environ[argv[2]] = path
    cmd = [sys.executable, os.path.join(HERE, "run_repro.py")] + argv[3:]
    os.execv(sys.executable, cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
