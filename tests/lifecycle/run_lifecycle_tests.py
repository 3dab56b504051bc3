#!/usr/bin/env python3
"""Lifecycle tests on one interpreter: exceptions inside
sessions, fork while a tuner is held (serialize, several children), os.fork
and multiprocessing spawn/forkserver/fork children that arm and report on
their own, subinterpreters left alone with one line, and interpreters started
before or after the first guard working there as without tunerguard.

  run_lifecycle_tests.py --lib LIB --python EXE [--only NAME,...]

Each program runs in a fresh directory with LD_PRELOAD in its own
environment only.  Exit 0 when every check holds, 1 otherwise, 77 when the
interpreter is missing."""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUBINTERP_LINE = "imported in a subinterpreter: subinterpreters are not supported"


class Run:
    def __init__(self, args, script, opts, argv=(), timeout=90):
        self.tmp = tempfile.mkdtemp(prefix="tg-life-")
        env = dict(os.environ)
        for k in ("PYTHONPATH", "PYTHONWARNINGS", "TUNERGUARD_OPTIONS"):
            env.pop(k, None)
        env.update(LD_PRELOAD=args.lib, TUNERGUARD_OPTIONS="log_path=tg:" + opts)
        p = subprocess.Popen([args.python, os.path.join(HERE, script), *argv], cwd=self.tmp, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            self.out, self.err = p.communicate(timeout=timeout)
            self.timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            self.out, self.err = p.communicate()
            self.timed_out = True
        self.rc, self.pid = p.returncode, p.pid

    def files(self, pattern):
        return sorted(os.path.basename(f) for f in glob.glob(os.path.join(self.tmp, pattern)))

    def kinds(self, pid):
        path = os.path.join(self.tmp, "tg.%d.jsonl" % pid)
        if not os.path.exists(path):
            return []
        return [json.loads(line)["kind"] for line in open(path)]

    def describe(self):
        return "rc=%s timed_out=%s files=%s\n--- stdout\n%s--- stderr\n%s" % (
            self.rc, self.timed_out, self.files("*"), self.out, self.err)


TUNERS = "targets=tglife.tuners:Tuner.run"


def t_exceptions(args, check):
    r = Run(args, "exceptions.py", "mode=serialize:" + TUNERS)
    m = re.search(r"WAITS (\d+)", r.out)
    s = re.search(r"(\d+) calls? serialized", r.err)
    check("exception: every hold released exactly once (A raises / nested depth 2 / a->b / async exc)",
          r.rc == 0 and "BAD" not in r.out, r)
    check("exception: exit summary counts the same waits as the audit events",
          m and s and m.group(1) == s.group(1), r)


def t_fork_serialize(args, check):
    r = Run(args, "fork_serialize.py", "mode=serialize:" + TUNERS, ["4"])
    check("fork (serialize) while H holds a: 4 children start with no holds, serialize among their own "
          "threads, exit 0; parent never waited", r.rc == 0 and "CHILD_STATUSES [0, 0, 0, 0]" in r.out, r)
    # The tuner is declared (targets=): each child's contended call is a
    # race its wait prevented, reported by the child; the parent reports none.
    children = [int(f.split(".")[1]) for f in r.files("tg.*.jsonl")]
    check("fork (serialize): each child reports the race its wait prevented, the parent nothing",
          r.pid not in children and len(children) == 4 and not r.files("tg.%d.*" % r.pid)
          and all(r.kinds(c) == ["race"] for c in children) and "WARNING" not in r.err, r)


def t_fork_race_child(args, check):
    r = Run(args, "fork_race_child.py", "mode=detect:" + TUNERS)
    m = re.search(r"CHILD_PID (\d+)", r.out)
    child = int(m.group(1)) if m else -1
    check("os.fork: the child detects its race and writes tg.<child pid>.txt/.jsonl; the parent writes none",
          r.rc == 0 and r.files("tg.*") == ["tg.%d.jsonl" % child, "tg.%d.txt" % child]
          and r.kinds(child) == ["race"], r)


def t_fork_memory(args, check):
    r = Run(args, "fork_memory.py", "mode=detect:" + TUNERS)
    m = re.search(r"CHILD_DIRTY_KB (\d+) (\w+)", r.out)
    # The child's own writes there: the thread record, the counts, the claimed
    # entries' pages; the whole table would be 4.7 MB.
    check("fork: the child's copy of the core's data stays small (under 1 MB; the tuner table is 4.7 MB) "
          "and its tuners still work", r.rc == 0 and m and int(m.group(1)) < 1024 and m.group(2) == "True", r)


def t_mp(method):
    def t(args, check):
        r = Run(args, "mp_children.py", "mode=detect:" + TUNERS, [method, "2"])
        m = re.search(r"CHILDREN (\d+) (\d+)", r.out)
        kids = [int(x) for x in m.groups()] if m else []
        want = sorted(["tg.%d.jsonl" % k for k in kids] + ["tg.%d.txt" % k for k in kids])
        check("multiprocessing %s: children inherit the preload, arm (class guarded in the child), report "
              "their own race in tg.<pid>.*; parent writes none" % method,
              r.rc == 0 and len(kids) == 2 and r.pid not in kids and r.files("tg.*") == want
              and all(r.kinds(k) == ["race"] for k in kids), r)
    return t


def t_subinterp(args, check):
    r = Run(args, "subinterp.py", "mode=detect:targets=tglife.pair_a:A.run,tglife.pair_b:B.run")
    subs = re.findall(r"^SUB (\w+) (\w+)$", r.out, re.M)
    check("subinterpreter: one line, once per process, naming the module",
          r.err.count(SUBINTERP_LINE) == 1 and "tglife.pair_a " + SUBINTERP_LINE in r.err, r)
    check("subinterpreter: its classes are left unguarded",
          len(subs) >= 2 and all(s == ("False", "False") for s in subs), r)
    check("subinterpreter: the main interpreter is still guarded and detects its race",
          r.rc == 0 and "MAIN True True" in r.out and r.kinds(r.pid) == ["race"], r)


def t_subinterp_before(args, check):
    for when in ("before", "after"):
        r = Run(args, "subinterp_before.py", "mode=detect:targets=tglife.pair_a:A.run", [when])
        if "SKIP no subinterpreters" in r.out:
            return
        if when == "before":
            check("subinterpreter started before the first guard: Enum, type.__setattr__/__delattr__/__new__ "
                  "work there afterwards", "PRE ok\n" in r.out, r)
        check("subinterpreter started after the first guard (%s: one started before it): the same work there"
              % ("with" if when == "before" else "without"), "NEW ok\n" in r.out, r)
        check("subinterpreters (%s the first guard): the main interpreter is still guarded and detects its race"
              % when, r.rc == 0 and "MAIN True" in r.out and r.kinds(r.pid) == ["race"], r)


TESTS = {"exceptions": t_exceptions, "fork_serialize": t_fork_serialize, "fork_race_child": t_fork_race_child,
         "fork_memory": t_fork_memory,
         "mp_spawn": t_mp("spawn"), "mp_forkserver": t_mp("forkserver"), "mp_fork": t_mp("fork"),
         "subinterp": t_subinterp, "subinterp_before": t_subinterp_before}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    if not os.path.exists(args.python):
        print("skipped: %s not installed" % args.python)
        return 77
    ok = True
    tmps = []

    def check(name, cond, r):
        nonlocal ok
        tmps.append(r.tmp)
        print("%s %s" % ("PASS" if cond else "FAIL", name), flush=True)
        if not cond:
            ok = False
            print(r.describe())

    for name, fn in TESTS.items():
        if args.only and name not in args.only.split(","):
            continue
        fn(args, check)
    if not args.keep:
        for d in set(tmps):
            shutil.rmtree(d, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
