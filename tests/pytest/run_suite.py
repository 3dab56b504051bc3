#!/usr/bin/env python3
"""`pytest --tunerguard` on the kernel suite (tests/pytest/suite), on a real Triton release.

  run_suite.py --python VENV_PYTHON --fakecuda DIR [--lib LIBTUNERGUARD | --installed] [--deps DIR]

VENV_PYTHON is a Triton release's venv (tools/triton_releases.sh); pytest,
pytest-run-parallel, pytest-xdist and pytest-timeout come from DIR (default:
tests/pytest/deps.sh fetches them once into ~/.cache/tunerguard; with
--installed, VENV_PYTHON's environment has them: tests/pytest/wheel_suite.sh).  --lib: the
plugin and API from the source tree's python/ (-p tunerguard.pytest_plugin,
TUNERGUARD_LIB=LIB); --installed: the tunerguard installed in VENV_PYTHON's
environment (the wheel), found through its pytest11 entry point.  Never with
LD_PRELOAD set by hand: the plugin starts pytest again under the library.

Each check prints "ok - ..." or "FAIL - ..."; exit 1 when one failed, 77 (one
line) when the venv or the pytest packages are missing.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "suite")
SRC = os.path.dirname(os.path.dirname(HERE))
FAILURES = []


def check(what, cond, detail=""):
    print(("ok - " if cond else "FAIL - ") + what, flush=True)
    if not cond:
        FAILURES.append(what)
        if detail:
            print("    " + detail.replace("\n", "\n    ")[-6000:], flush=True)


class Run:
    """One pytest run in a fresh folder: exit status, output, JUnit XML outcomes."""

    def __init__(self, args, env, work, *pytest_args, extra_env=None, timeout=300):
        self.dir = tempfile.mkdtemp(dir=work)
        junit = os.path.join(self.dir, "junit.xml")
        cmd = [args.python, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--junitxml=" + junit]
        cmd += ([] if args.installed else ["-p", "tunerguard.pytest_plugin"]) + list(pytest_args)
        e = dict(env, **(extra_env or {}))
        try:
            p = subprocess.run(cmd, cwd=self.dir, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=timeout)
            self.rc, self.out = p.returncode, p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as t:
            self.rc, self.out = None, (t.stdout or b"").decode(errors="replace") + "\n(timed out)"
        self.cases = {}
        if os.path.isfile(junit):
            for case in ET.parse(junit).iter("testcase"):
                bad = case.find("failure")
                if bad is None:
                    bad = case.find("error")
                text = "" if bad is None else (bad.get("message", "") + "\n" + (bad.text or ""))
                props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
                self.cases[case.get("name")] = ("failed" if bad is not None else
                                                "skipped" if case.find("skipped") is not None else "passed",
                                                text, props)

    def outcome(self, name):
        return self.cases.get(name, ("missing", "", []))[0]

    def text(self, name):
        return self.cases.get(name, ("missing", "", []))[1]

    def props(self, name):
        return dict(self.cases.get(name, ("missing", "", []))[2])

    def records(self):
        out = []
        for fn in sorted(os.listdir(self.dir)):
            if fn.startswith("tunerguard.") and fn.endswith(".jsonl"):
                with open(os.path.join(self.dir, fn)) as f:
                    out += [json.loads(line) for line in f if line.strip()]
        return out


OTHERS = ("test_scale_warm", "test_scale_plain", "test_scale_known_race")
TYPEERROR = "TypeError: 'NoneType' object is not a mapping"


def others_pass(r):
    """The tests that do not race pass.  test_scale_warm's threads call a key tuned before they
    start, where Triton's run() still writes self.nargs and clears it on every call: a thread
    switch right after the write (the GIL handed over there) lets another call's return clear it,
    the race's own TypeError, without tunerguard and under detect alike (seen once in a clean
    run, Triton 3.5.1 on 3.10; detect counts that overlap as low severity and writes no report,
    docs/limitations.md).  That failure is accepted when it is bare: the program's own race, not
    a test failed by the plugin."""
    def ok(t):
        return r.outcome(t) == "passed" or (t == "test_scale_warm" and r.outcome(t) == "failed" and
                                            TYPEERROR in r.text(t) and "In short:" not in r.text(t))
    return all(ok(t) for t in OTHERS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--fakecuda", required=True)
    ap.add_argument("--lib")
    ap.add_argument("--installed", action="store_true")
    ap.add_argument("--deps")
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    if not os.access(args.python, os.X_OK):
        print("run_suite: SKIPPED: no %s (tools/triton_releases.sh make)" % args.python)
        return 77
    if not args.deps and not args.installed:
        p = subprocess.run(["sh", os.path.join(HERE, "deps.sh"), args.python], stdout=subprocess.PIPE)
        if p.returncode:
            return p.returncode
        args.deps = p.stdout.decode().strip()
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "TUNERGUARD_OPTIONS", "TUNERGUARD_LIB", "PYTHONPATH", "TUNERGUARD_PYTEST_REEXEC")}
    env["PYTHONPATH"] = (args.deps or "") if args.installed else args.deps + os.pathsep + os.path.join(SRC, "python")
    env["LD_LIBRARY_PATH"] = os.path.abspath(args.fakecuda) + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if not args.installed:
        env["TUNERGUARD_LIB"] = os.path.abspath(args.lib)
    par = "--parallel-threads=%d" % args.threads
    kern = os.path.join(SUITE, "test_kernels.py")
    work = tempfile.mkdtemp(prefix="tg-pytest-")
    try:
        # 1. without the plugin: the racing test fails with a bare TypeError
        r = Run(args, env, work, "-p", "no:tunerguard", par, kern)
        check("no plugin: pytest exits 1", r.rc == 1, r.out)
        check("no plugin: test_scale_racing fails with a bare TypeError",
              r.outcome("test_scale_racing") == "failed" and TYPEERROR in r.text("test_scale_racing")
              and "tunerguard:" not in r.text("test_scale_racing"), r.out)
        check("no plugin: the other tests pass", others_pass(r), r.out)
        check("no plugin: no report files", r.records() == [])

        # 2. --tunerguard (detect): the racing test fails with the report, the rest pass
        r = Run(args, env, work, "--tunerguard", par, kern)
        t = r.text("test_scale_racing") + r.out
        check("detect: pytest started again under the library (header line)",
              "tunerguard: mode=detect, library " in r.out, r.out)
        check("detect: pytest exits 1 (a test failed)", r.rc == 1, r.out)
        check("detect: test_scale_racing fails with In short / What it does / What to do and the report path",
              r.outcome("test_scale_racing") == "failed" and all(
                  s in t for s in ("In short: kernel 'scale_racing'", "What it does:", "What to do:", "Report: ")), r.out)
        check("detect: ... and with its own TypeError too (raced, then raised)", TYPEERROR in r.text("test_scale_racing"))
        check("detect: the other tests pass (the known race reported, not failed)",
              others_pass(r), r.out)
        props = r.props("test_scale_racing")
        check("detect: JUnit XML properties tunerguard_kernel and tunerguard_report (a file)",
              props.get("tunerguard_kernel") == "scale_racing" and os.path.isfile(props.get("tunerguard_report", "")),
              repr(props))
        check("detect: JUnit XML marks the known race", r.props("test_scale_known_race").get("tunerguard_known_race")
              == "scale_known", repr(r.props("test_scale_known_race")))
        check("detect: terminal summary: races per kernel, tests that raced, report files",
              "tunerguard summary (mode=detect)" in r.out and "races on kernel 'scale_racing': " in r.out
              and "test_scale_racing on 'scale_racing': FAILED by tunerguard" in r.out
              and "test_scale_known_race on 'scale_known': known to race" in r.out and "report file: " in r.out, r.out)
        races = [x for x in r.records() if x["kind"] == "race"]
        check("detect: the report files hold the races on both kernels", {x["tuner"]["kernel"] for x in races}
              == {"scale_known", "scale_racing"}, repr([x["tuner"]["kernel"] for x in races]))

        # 3. --tunerguard=serialize: all pass
        r = Run(args, env, work, "--tunerguard=serialize", par, kern)
        check("serialize: pytest exits 0, every test passes",
              r.rc == 0 and all(r.outcome(x) == "passed" for x in OTHERS + ("test_scale_racing",)), r.out)
        check("serialize: the summary counts the prevented races", "tunerguard summary (mode=serialize)" in r.out
              and "prevented by serialize" in r.out, r.out)

        # 4. the mode from the ini file, and from TUNERGUARD_OPTIONS
        r = Run(args, env, work, "-o", "tunerguard=serialize", par, kern)
        check("ini tunerguard = serialize: every test passes", r.rc == 0 and "mode=serialize" in r.out, r.out)
        r = Run(args, env, work, "--tunerguard", par, kern, extra_env={"TUNERGUARD_OPTIONS": "mode=serialize"})
        check("TUNERGUARD_OPTIONS=mode=serialize with --tunerguard: every test passes",
              r.rc == 0 and "mode=serialize" in r.out, r.out)

        # 5. pytest-xdist: each worker pins its races; the controller's summary has them all
        # (--dist=loadfile: one file to each of the two workers, both of which race)
        sup_test = os.path.join(SUITE, "test_suppressed.py")
        r = Run(args, env, work, "--tunerguard", "-n", "2", "--dist=loadfile", par, kern, sup_test)
        check("xdist -n 2: test_scale_racing and test_scale_suppressed fail with the report, the others pass",
              r.rc == 1 and r.outcome("test_scale_racing") == "failed" and "In short: kernel 'scale_racing'" in r.out
              and r.outcome("test_scale_suppressed") == "failed" and "In short: kernel 'scale_suppressed'" in r.out
              and others_pass(r), r.out)
        pids = {x["pid"] for x in r.records()}
        check("xdist -n 2: one summary with both workers' races and report files (pids %s)" % sorted(pids),
              len(pids) == 2 and r.out.count("tunerguard summary") == 1 and "races on kernel 'scale_racing': " in r.out
              and "races on kernel 'scale_suppressed': " in r.out
              and all(("tunerguard.%d.jsonl" % p) in r.out for p in pids), r.out)

        # 6. suppressions apply
        supp = os.path.join(work, "suppressions.txt")
        with open(supp, "w") as f:
            f.write("race:^scale_suppressed$\n")
        r = Run(args, env, work, "--tunerguard", par, sup_test)
        check("suppressions: without the file test_scale_suppressed fails", r.outcome("test_scale_suppressed") == "failed", r.out)
        r = Run(args, env, work, "--tunerguard", "--tunerguard-option", "suppressions=" + supp, par, sup_test)
        check("suppressions: with race:^scale_suppressed$ it passes", r.rc == 0, r.out)

        # 7. pytest-timeout ends the process; the report written at the race stays
        r = Run(args, env, work, "--tunerguard", "--timeout=10", "--timeout-method=thread", par,
                os.path.join(SUITE, "test_timeout.py"))
        check("pytest-timeout: the run is ended (status %s)" % r.rc, r.rc not in (0, None) and "Timeout" in r.out, r.out)
        check("pytest-timeout: the race record was written before", any(
            x["kind"] == "race" and x["tuner"]["kernel"] == "scale_hang" for x in r.records()), r.out)

        # 8. the cold-cache fixture
        r = Run(args, env, work, "--tunerguard", par, os.path.join(SUITE, "test_cold_cache.py"))
        check("tunerguard_cold_cache: a fresh TRITON_CACHE_DIR, the tuners' caches emptied, put back after",
              r.rc == 0 and r.outcome("test_cold") == "passed", r.out)

        # 9. the API, in both modes
        for mode in ("detect", "serialize"):
            r = Run(args, env, work, "--tunerguard=" + mode, par, os.path.join(SUITE, "test_api.py"),
                    extra_env={"SUITE_EXPECT_MODE": mode, "TUNERGUARD_LIB": env.get("TUNERGUARD_LIB", "")})
            check("API under --tunerguard=%s: active(), mode(), loaded_library(), reports(), text_summary()" % mode,
                  r.rc == 0, r.out)

        # 10. the report folder, and a malformed option said in one line
        r = Run(args, env, work, "--tunerguard", "--tunerguard-report-dir=reports", par, sup_test)
        check("--tunerguard-report-dir: the report files are there, the failure names them",
              any(fn.endswith(".jsonl") for fn in os.listdir(os.path.join(r.dir, "reports")))
              and os.path.join(r.dir, "reports", "tunerguard.") in r.text("test_scale_suppressed") + r.out, r.out)
        r = Run(args, env, work, "--tunerguard", "--tunerguard-option", "junk", par, sup_test)
        check("--tunerguard-option junk: a usage error naming it, nothing run",
              r.rc == 4 and "malformed option 'junk'" in r.out and not r.cases, r.out)

        # 11. no loop: a library ld.so will not preload is said once and the run goes on without it
        bogus = os.path.join(work, "libtunerguard.so")
        with open(bogus, "w") as f:
            f.write("not an ELF file\n")
        r = Run(args, env, work, "--tunerguard", par, kern, extra_env={"TUNERGUARD_LIB": bogus}, timeout=120)
        check("a library that cannot be preloaded: one warning, no second start, pytest's own status",
              r.rc == 1 and r.out.count("started again under") == 1 and r.outcome("test_scale_plain") == "passed", r.out)
    finally:
        if not FAILURES:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept %s" % work)
    print("%d check(s) failed" % len(FAILURES) if FAILURES else "all checks passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
