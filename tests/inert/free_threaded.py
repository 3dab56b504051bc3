#!/usr/bin/env python3
"""A free-threaded CPython (3.13t, 3.14t) is served: with the GIL off
(PYTHON_GIL=0) and turned back on (PYTHON_GIL=1), as users run both.

  free_threaded.py --python EXE --lib LIB --fakecuda DIR --tunerguard BIN --minor N [--expected-missing]

For each regime: the interpreter is the free-threaded build of 3.N and the
GIL is as the regime says, with the preload as without (tunerguard imports no
extension module that could turn it on); inert.py's checks hold (a process
that imports no target is left as it was; a target imported: Autotuner.run
guarded, tunerguard's finder first in sys.meta_path); a target module
imported four ways at verbosity=2: the class guarded once, no refusal line,
the program's output and exit status unchanged; the model's seeds/004
(tests/repro, two threads, the overlap forced with events) under mode=detect
writes a race report naming the kernel, and under mode=serialize passes;
`tunerguard doctor --python EXE` says it is served, with the GIL as the regime
says, and that the hooks arm (tests/cli/doctor_python.py).
Exit 0 when every check holds, 1 otherwise, 77 (SKIP) when the interpreter
is missing (--expected-missing: an interpreter none can have here yet, whose
skip tools/skipped_tests.py counts as expected: "SKIP (expected): ...")."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPRO = os.path.join(HERE, "..", "repro", "run_repro.py")
PROG = r"""
import sys
import triton.runtime.autotuner
import triton.runtime.autotuner
from triton.runtime import autotuner
import importlib
importlib.import_module('triton.runtime.autotuner')
print(sys._is_gil_enabled(), [type(f).__name__ for f in sys.meta_path])
raise SystemExit(3)
"""
BUILD = ("import sys, sysconfig; print(sysconfig.get_config_var('Py_GIL_DISABLED'), sys.version_info[1], "
         "sys._is_gil_enabled())")


def env_for(gil, lib=None, model=None, options=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONPATH", "TUNERGUARD_OPTIONS")}
    env["PYTHON_GIL"] = gil
    if model:
        env["PYTHONPATH"] = model
    if lib:
        env["LD_PRELOAD"] = lib
        if options:
            env["TUNERGUARD_OPTIONS"] = options
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--fakecuda", required=True)
    ap.add_argument("--tunerguard", required=True)
    ap.add_argument("--minor", type=int, required=True)
    ap.add_argument("--expected-missing", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(a.python):
        if a.expected_missing:
            print(f"SKIP (expected): {a.python} not installed (the free-threaded CPython 3.{a.minor}: none can be "
                  f"had here; point TG_PY3{a.minor}T at the prefix of one)")
        else:
            print(f"SKIP: {a.python} not installed (the free-threaded CPython 3.{a.minor}; tools/dev py313t builds "
                  f"3.13t)")
        return 77
    lib = os.path.abspath(a.lib)
    model = tempfile.mkdtemp(prefix="tg-free-threaded-")
    os.makedirs(os.path.join(model, "triton", "runtime"))
    for init in ("triton/__init__.py", "triton/runtime/__init__.py"):
        open(os.path.join(model, init), "w").close()
    with open(os.path.join(model, "triton", "runtime", "autotuner.py"), "w") as f:
        f.write("class Autotuner:\n    def run(self, *args, **kwargs):\n        return None\n")
    failures = []

    def check(what, ok, detail=""):
        print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail!r}"))
        if not ok:
            failures.append(what)

    try:
        for gil in ("0", "1"):
            regime(a, lib, model, gil, check)
    finally:
        shutil.rmtree(model, ignore_errors=True)
    print(f"free_threaded: {len(failures)} failure(s)" if failures else "free_threaded: all checks hold")
    return 1 if failures else 0


def regime(a, lib, model, gil, check):
    on = "True" if gil == "1" else "False"
    tag = f"PYTHON_GIL={gil}"
    want = f"1 {a.minor} {on}\n"
    plain, pre = (subprocess.run([a.python, "-c", BUILD], env=env_for(gil, l), capture_output=True, text=True,
                                 timeout=120) for l in (None, lib))
    check(f"{tag}: a free-threaded 3.{a.minor}, the GIL {'on' if gil == '1' else 'off'}, with the preload as without",
          plain.stdout == pre.stdout == want and pre.stderr == "", (want, plain.stdout, pre.stdout, pre.stderr))
    q = subprocess.run([sys.executable, os.path.join(HERE, "inert.py"), "--python", a.python, "--lib", lib],
                       env=env_for(gil), capture_output=True, text=True, timeout=600)
    check(f"{tag}: inert.py's checks hold (nothing changed without a target; guarded, the finder first with one)",
          q.returncode == 0, [ln for ln in q.stdout.splitlines() if not ln.startswith("ok")][-6:] + [q.stderr[-300:]])
    plain = subprocess.run([a.python, "-c", PROG], env=env_for(gil, None, model), capture_output=True, text=True,
                           timeout=120)
    pre = subprocess.run([a.python, "-c", PROG], env=env_for(gil, lib, model, "verbosity=2"), capture_output=True,
                         text=True, timeout=120)
    lines = [ln for ln in pre.stderr.splitlines() if ln.startswith("tunerguard:")]
    check(f"{tag}: a target imported four ways: guarded once, nothing refused",
          sum("guarding Autotuner.run (target)" in ln for ln in lines) == 1
          and not any("unguarded" in ln or "not serve" in ln for ln in lines), lines)
    check(f"{tag}: a target imported: the same output and exit status, the finder first",
          plain.returncode == pre.returncode == 3 and plain.stdout.startswith(f"{on} ['type'")
          and pre.stdout == plain.stdout.replace("[", "['Finder', ", 1), (plain.stdout, pre.stdout, pre.returncode))
    r = subprocess.run([sys.executable, REPRO, "--python", a.python, "--lib", lib, "--fakecuda", a.fakecuda,
                        "--scenario", "seeds004", "--mode", "detect", "--mode", "serialize", "--keep-failed"],
                       env=env_for(gil), capture_output=True, text=True, timeout=600)
    check(f"{tag}: the model's seeds/004: detect reports the race, serialize passes", r.returncode == 0,
          (r.stdout[-1500:], r.stderr[-500:]))
    d = subprocess.run([sys.executable, os.path.join(HERE, "..", "cli", "doctor_python.py"), "--python", a.python,
                        "--tunerguard", a.tunerguard], env=env_for(gil), capture_output=True, text=True, timeout=900)
    check(f"{tag}: tunerguard doctor: served, the GIL {'on' if gil == '1' else 'off'}, the hooks arm", d.returncode == 0,
          d.stdout[-1500:])


if __name__ == "__main__":
    sys.exit(main())
