#!/usr/bin/env python3
"""tunerguard doctor on one interpreter of the matrix: it is said to be served
and the library's hooks arm in a preloaded child of it.

  doctor_python.py --python EXE --tunerguard BIN

Runs `BIN doctor --python EXE` (no TUNERGUARD_OPTIONS, nothing preloaded) and
checks its lines: "OK    --python: EXE is CPython <version>, supported", with
the version EXE itself says (a free-threaded build: "<version>t (free-threaded),
supported; the GIL is on|off here", as EXE says under the environment's
PYTHON_GIL), and "OK    EXE: hooks arm"; no line is FAIL and
the exit status is 0.  Exit 0 when all hold, 1 otherwise, 77 when the
interpreter is missing."""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--tunerguard", required=True)
    a = ap.parse_args()
    if not os.access(a.python, os.X_OK):
        print("doctor_python: SKIPPED: no interpreter %s" % a.python, file=sys.stderr)
        return 77
    ver, ft, gil = subprocess.run([a.python, "-c", "import sys, sysconfig; print(sys.version.split()[0], "
                                   "sysconfig.get_config_var('Py_GIL_DISABLED'), "
                                   "getattr(sys, '_is_gil_enabled', lambda: True)())"],
                                  capture_output=True, text=True, timeout=60).stdout.split()
    env = {k: v for k, v in os.environ.items() if k not in ("TUNERGUARD_OPTIONS", "LD_PRELOAD")}
    p = subprocess.run([a.tunerguard, "doctor", "--python", a.python], env=env,
                       capture_output=True, text=True, timeout=600)
    lines = p.stdout.splitlines()
    fails = []

    def check(what, ok):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            fails.append(what)

    said = "OK    --python: %s is CPython %s, supported" % (a.python, ver)
    said_ft = "OK    --python: %s is CPython %st (free-threaded), supported; the GIL is %s here" % (
        a.python, ver, "on" if gil == "True" else "off")
    check("%s said to be CPython %s, supported" % (a.python, ver),
          said in lines if ft != "1" else any(line.startswith(said_ft) for line in lines))
    check("hooks arm in a preloaded child of %s" % a.python,
          any(line.startswith("OK    %s: hooks arm " % a.python) for line in lines))
    check("no FAIL line, exit status 0",
          p.returncode == 0 and not any(line.startswith("FAIL") for line in lines))
    if fails:
        print("--- tunerguard doctor --python %s (exit %d)\n%s%s" % (a.python, p.returncode, p.stdout, p.stderr))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
