#!/usr/bin/env python3
"""A free-threaded CPython newer than tunerguard serves (3.15t, 3.16t), and one
with a GIL newer than it serves (3.16), gets exactly one line, naming the
module and the version, when a target module is imported, and nothing else
(no interpreter of these kinds can be had here: tests/inert/fake_ft_python.c
stands in for one).

  fake_ft.py --prog FAKE_FT_PYTHON --lib LIB

Checks, with LD_PRELOAD=LIB and verbosity=2: a 3.15t, a 3.16t and a GIL
build's 3.16 version string, target modules imported four times among
others: the one exact line; no target imported: nothing.  The same stand-in
saying a 3.13t, a 3.14t or a GIL build's 3.14: no refusal line (tunerguard
serves those, which the stand-in cannot host, so only the absence of the
refusal is checked; tests/inert/py313t.py runs the real 3.13t).  Exit 0 or 1."""
import argparse
import os
import subprocess
import sys

LINE = ("tunerguard: triton.runtime.autotuner imported, but this Python ({v}) is a free-threaded build newer "
        "than 3.14t, the newest free-threaded one tunerguard serves: its tuners run unguarded")
NEWER = ("tunerguard: triton.runtime.autotuner imported, but this Python ({v}) is newer than 3.15, the newest "
         "tunerguard serves: its tuners run unguarded")
FT = {"3.15.0": "3.15.0 free-threading build (main, Oct 7 2026, 10:00:00) [GCC 16.2.0]",
      "3.16.0": "3.16.0 free-threading build (main, Oct 7 2027, 10:00:00) [GCC 16.2.0]"}
SERVED = {"3.14t": "3.14.0 free-threading build (main, Oct 7 2025, 10:00:00) [GCC 14.2.0]",
          "3.13t": "3.13.1 experimental free-threading build (main, Dec 3 2024, 10:00:00) [GCC 12.2.0]",
          "3.14": "3.14.10 (main, Oct 26 2026, 15:12:11) [GCC 16.2.0]"}


def run(prog, lib, version, mods):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TUNERGUARD_OPTIONS")}
    env.update(LD_PRELOAD=lib, TUNERGUARD_OPTIONS="verbosity=2", TG_FAKE_PY_VERSION=version)
    return subprocess.run([prog] + mods, env=env, capture_output=True, text=True, timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    lib = os.path.abspath(a.lib)
    fails = []

    def check(what, ok, detail):
        print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": %r" % (detail,)))
        if not ok:
            fails.append(what)

    mods = ["os", "triton", "triton.runtime", "triton.runtime.autotuner", "triton.runtime.autotuner",
            "json", "triton.runtime.autotuner", "triton.runtime.autotuner"]
    cases = [(short, "free-threaded", version, LINE) for short, version in FT.items()]
    cases.append(("3.16.0", "with a GIL", "3.16.0 (main, Oct 7 2027, 10:00:00) [GCC 16.2.0]", NEWER))
    for short, kind, version, line in cases:
        p = run(a.prog, lib, version, mods)
        check("%s %s, a target imported: exactly the one line" % (short, kind),
              p.returncode == 0 and p.stderr == line.format(v=short) + "\n"
              and p.stdout.startswith("1 audit hook(s)"), (p.returncode, p.stdout, p.stderr))
        p = run(a.prog, lib, version, ["os", "json", "triton"])
        check("%s %s, no target imported: nothing" % (short, kind),
              p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr))
    for short, version in SERVED.items():
        p = run(a.prog, lib, version, mods)
        check("%s, a target imported: no refusal" % short, p.returncode == 0 and "unguarded" not in p.stderr,
              (p.returncode, p.stderr))
    print("fake_ft: %d failure(s)" % len(fails) if fails else "fake_ft: all checks hold")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
