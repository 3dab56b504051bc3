#!/usr/bin/env python3
"""An interpreter tunerguard does not serve (older than 3.9) gets one line,
once, when a target module is imported, and nothing else changes.

  unsupported.py --python EXE --lib LIB [--no-audit]

With the preload: `-c pass` writes nothing and imports nothing more; a program
that imports triton.runtime.autotuner (a stub of a few lines: the model in
tests/repro needs 3.8+) four ways (import statement twice,
from-import, importlib.import_module) gets exactly one line naming the module
and the version, the same output and exit status otherwise, and no finder in
sys.meta_path.  --no-audit (3.7 and older: no audit hooks, nothing tunerguard
could hook) expects no line at all.  Exit 77 when the interpreter is
missing.  (The free-threaded builds: free_threaded.py, fake_ft.py.)"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

PROG = r"""
import sys
import triton.runtime.autotuner
import triton.runtime.autotuner
from triton.runtime import autotuner
import importlib
importlib.import_module('triton.runtime.autotuner')
print(type(autotuner.Autotuner.__dict__['run']).__name__, [type(f).__name__ for f in sys.meta_path])
raise SystemExit(3)
"""
LINE = "older than 3.9, which tunerguard does not serve"


def run(python, lib, code, model):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONPATH", "TUNERGUARD_OPTIONS")}
    env["PYTHONPATH"] = model
    if lib:
        env["LD_PRELOAD"] = lib
        env["TUNERGUARD_OPTIONS"] = "verbosity=2"  # even at the most verbose: one line
    return subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--no-audit", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(a.python):
        print(f"SKIP: {a.python} not installed")
        return 77
    lib = os.path.abspath(a.lib)
    model = tempfile.mkdtemp(prefix="tg-unsupported-")
    os.makedirs(os.path.join(model, "triton", "runtime"))
    for init in ("triton/__init__.py", "triton/runtime/__init__.py"):
        open(os.path.join(model, init), "w").close()
    with open(os.path.join(model, "triton", "runtime", "autotuner.py"), "w") as f:
        f.write("class Autotuner:\n    def run(self, *args, **kwargs):\n        return None\n")
    try:
        return checks(a, lib, model)
    finally:
        shutil.rmtree(model, ignore_errors=True)


def checks(a, lib, model):
    failures = []

    def check(what, ok, detail=""):
        print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail!r}"))
        if not ok:
            failures.append(what)

    mods = "import sys; print(sorted(sys.modules), [type(f).__name__ for f in sys.meta_path])"
    plain, pre = run(a.python, None, mods, model), run(a.python, lib, mods, model)
    check("no target: nothing written", pre.stderr == "" and pre.returncode == 0, pre.stderr)
    check("no target: same modules and sys.meta_path", plain.stdout == pre.stdout, (plain.stdout, pre.stdout))
    plain, pre = run(a.python, None, PROG, model), run(a.python, lib, PROG, model)
    version = subprocess.run([a.python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
    check("target imported: same output and exit status", (plain.stdout, plain.returncode) ==
          (pre.stdout, pre.returncode) and pre.returncode == 3, (plain.stdout, pre.stdout, pre.returncode))
    lines = [ln for ln in pre.stderr.splitlines() if ln.startswith("tunerguard:")]
    if a.no_audit:
        check("no audit hooks in this version: no line", pre.stderr == plain.stderr, pre.stderr)
    else:
        check("target imported: exactly one tunerguard line", len(lines) == 1, pre.stderr)
        check("the line names the module and the version and says why",
              len(lines) == 1 and "triton.runtime.autotuner" in lines[0] and f"({version})" in lines[0]
              and LINE in lines[0], lines)
        check("nothing else on stderr", pre.stderr.replace(lines[0] + "\n", "", 1) == plain.stderr
              if lines else False, pre.stderr)
    print(f"unsupported: {len(failures)} failure(s)" if failures else "unsupported: all checks hold")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
