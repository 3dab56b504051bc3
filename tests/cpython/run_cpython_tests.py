#!/usr/bin/env python3
"""CPython's own regression tests as a judge of the preload.

  run_cpython_tests.py --python EXE --lib LIB [--full] [--only MODULE,...] [--keep]

Runs a set of CPython regression-test modules (`EXE -m test --junit-xml ...`)
twice, without and with LD_PRELOAD=LIB (its default options: detect mode,
no target imported), and compares the outcome of every test case: ok, FAIL,
ERROR, skipped, or missing.  A test that fails without the preload too is not
tunerguard's; a test whose outcome differs is run again alone (-m its id), up
to twice in each mode, so that one flaky CPython test does not fail this
check; a difference that holds fails it, as does a preloaded run that wrote
no results (the interpreter crashed).  test_site runs from a fresh venv
(--without-pip), where test_startup_imports is not skipped for .pth files.

Run time: the full modules take ~2 min per mode on one interpreter of the
2-core VM (test_subprocess 37 s, test_signal 31 s, test_threading 19 s,
test_faulthandler 14 s, test_importlib 9 s), too long for six interpreters in
CI.  So by default those five run with -m filters (the parts where a preload
shows: fds passed to and closed in children, threads, signal handlers and
wakeup fds, faulthandler's dumps and fatal signals, meta_path and find_spec),
and the fast modules (test_sys, test_site, test_audit, test_inspect,
test_traceback) run whole: ~13 s of CPU per mode.  Most of the time is the
tests' own waits (sleeps, timeouts, children), so --jobs (4) regrtest runs go
at once, both modes alike; ~20 s per interpreter.  --full (or
TG_CPYTHON_FULL=1) runs every module whole.

Exit 0 when no difference holds, 1 otherwise, 77 when the interpreter or its
test package is missing."""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

# (module, -m patterns in the default run (None: whole), run from a fresh venv)
PLAN = [
    ("test_sys", None, False),
    ("test_site", None, True),
    ("test_audit", None, False),
    ("test_inspect", None, False),
    ("test_traceback", None, False),
    ("test_subprocess", ["*pass_fds*", "*close_fd*", "*fd_leak*", "*inheritable*"], False),
    ("test_importlib", ["*meta_path*", "*invalidate_caches*", "*find_spec*"], False),
    ("test_threading", ["ThreadTests"], False),
    ("test_signal", ["*wakeup*", "*set_handler*", "*pthread_sigmask*"], False),
    ("test_faulthandler", ["*enable*", "*dump_traceback_threads*", "*sigsegv*"], False),
]
CLEAR = ("LD_PRELOAD", "TUNERGUARD_OPTIONS", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONWARNINGS")


def regrtest(python, lib, module, patterns, workdir, timeout=600):
    """Run one module; {test id: outcome}, or None when no results were written."""
    xml = os.path.join(workdir, f"{module}-{'pre' if lib else 'plain'}-{time.monotonic_ns()}.xml")
    env = {k: v for k, v in os.environ.items() if k not in CLEAR}
    if lib:
        env["LD_PRELOAD"] = lib
    cmd = [python, "-m", "test", "--junit-xml", xml, module]
    for p in patterns or ():
        cmd += ["-m", p]
    cwd = tempfile.mkdtemp(prefix="run-", dir=workdir)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    regrtest.seconds[(module, bool(lib))] = time.monotonic() - t0
    if not os.path.exists(xml):
        return None, p.stdout[-3000:]
    out = {}
    for tc in ET.parse(xml).getroot().iter("testcase"):
        kinds = {c.tag for c in tc}
        out[tc.get("name")] = ("ERROR" if "error" in kinds else "FAIL" if "failure" in kinds
                               else "skipped" if "skipped" in kinds else "ok")
    return out, p.stdout


regrtest.seconds = {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--full", action="store_true", default=os.environ.get("TG_CPYTHON_FULL") == "1")
    ap.add_argument("--only", help="comma-separated modules of the plan")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--jobs", type=int, default=4, help="regrtest runs at once")
    a = ap.parse_args()
    if not os.path.exists(a.python):
        print(f"cpython: {a.python} not installed; skipped")
        return 77
    has_tests = subprocess.run([a.python, "-c", "import test.support, test.libregrtest"], capture_output=True)
    if has_tests.returncode != 0:
        print(f"cpython: {a.python} has no test package (Debian: libpython3.X-testsuite); skipped")
        return 77
    lib = os.path.abspath(a.lib)
    work = tempfile.mkdtemp(prefix="tg-cpython-")
    venv = os.path.join(work, "venv")
    subprocess.run([a.python, "-m", "venv", "--without-pip", venv], check=True, capture_output=True)
    only = set(a.only.split(",")) if a.only else None
    held, crashed, t0 = [], [], time.monotonic()
    runs = []
    for module, patterns, in_venv in PLAN:
        if not only or module in only:
            runs.append((module, None if a.full else patterns,
                         os.path.join(venv, "bin", "python") if in_venv else a.python, in_venv))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = {(m, mode): pool.submit(regrtest, py, lib if mode else None, m, pats, work)
                for m, pats, py, _ in runs for mode in (0, 1)}
        results = {k: f.result() for k, f in futs.items()}
    for module, pats, py, in_venv in runs:
        plain, plain_log = results[(module, 0)]
        pre, pre_log = results[(module, 1)]
        if pre is None:
            crashed.append(module)
            print(f"FAIL {module}: no results with the preload:\n{pre_log}")
            continue
        if plain is None:
            print(f"note {module}: no results without the preload (not tunerguard's):\n{plain_log[-800:]}")
            continue
        diffs = sorted(t for t in set(plain) | set(pre) if plain.get(t, "missing") != pre.get(t, "missing"))
        for t in diffs:
            # Again alone, twice per mode: a difference that holds is ours.
            seen_plain, seen_pre = {plain.get(t, "missing")}, {pre.get(t, "missing")}
            for _ in range(2):
                r, _log = regrtest(py, None, module, [t], work)
                seen_plain.add((r or {}).get(t, "missing"))
                r, _log = regrtest(py, lib, module, [t], work)
                seen_pre.add((r or {}).get(t, "missing"))
            if seen_plain & seen_pre:
                print(f"note {t}: differed once ({plain.get(t)} without, {pre.get(t)} with), "
                      f"not when run alone: {sorted(seen_plain)} / {sorted(seen_pre)}")
            else:
                held.append(t)
                print(f"FAIL {t}: {sorted(seen_plain)} without the preload, {sorted(seen_pre)} with it")
        counts = {}
        for o in pre.values():
            counts[o] = counts.get(o, 0) + 1
        print(f"{'ok  ' if not any(t in held for t in diffs) else 'FAIL'} {module}"
              f"{' (venv)' if in_venv else ''}{'' if pats is None else ' -m ' + ' -m '.join(pats)}: "
              f"{len(pre)} cases, {', '.join(f'{n} {o}' for o, n in sorted(counts.items()))}; "
              f"{regrtest.seconds.get((module, False), 0):.1f} s / {regrtest.seconds.get((module, True), 0):.1f} s",
              flush=True)
    if a.keep:
        print(f"cpython: work directory kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    bad = held + crashed
    print(f"cpython: {len(bad)} difference(s) that hold in {time.monotonic() - t0:.0f} s" if bad
          else f"cpython: same outcome of every case with and without the preload ({time.monotonic() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
