#!/usr/bin/env python3
"""tunerguard built with ThreadSanitizer (cmake -DTG_SANITIZE=thread, tools/dev
tsan) under an uninstrumented free-threaded CPython with the GIL off: the
serialize and detect stress programs, each preloaded with the toolchain's
libtsan first, then the library.

  run_tsan.py --lib build-tsan/libtunerguard.so --python .../python3.13t
              --fakecuda build-tsan/tests/fakecuda [--tsan-rt libtsan.so.2]
              [--only serialize,link_stress,soak] [--keep DIR]

The programs: tests/serialize/run_serialize_tests.py (every serialize program
with its options: cycles, long waits, threads that die inside, fork, signal
handlers), bench/link_stress.py (detect: many threads racing on cold keys of
the model, the exception links), and bench/soak.py (serialize: nested tuners,
thread churn).  Each must exit 0 under TSan as it does without it: a program
that fails (link_stress: 1 allowed, see programs()), or a process of it that
TSan's runtime ended (its own errors in the logs), fails the test with the
program's output.

TSan writes its reports to files (log_path), suppressed by tests/tsan/tsan.supp
(what CPython and the stand-in driver do, each line with its reason).  A
report with a frame of tunerguard's own code (a source file of the library)
fails the test; each is listed once, by the first such frame of each of its
stacks (the two accesses), with their folders (TG_TSAN_VERBOSE=1: the whole
reports).  Exit 0 clean, 1 reports in tunerguard's code or a program that
failed, 77 when the interpreter or the runtime is missing."""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OWN_DIRS = ("core", "detectors", "reports", "loader", "cuda", "guard")
FRAME = re.compile(r"^\s+#\d+ (\S+) (\S+?)(?::(\d+))?(?::\d+)? \((.*)\)$")


def programs(a, lib):
    """(name, argv, the exit statuses that pass)."""
    py, fake = a.python, a.fakecuda
    ser = os.path.join(ROOT, "tests", "serialize", "run_serialize_tests.py")
    # --gil-regime nogil: the driver expects what the GIL's absence changes
    # (every overlap of an Autotuner's calls is a race) and checks the children
    # ran without it, as serialize/3.13t-nogil does.
    yield "serialize", [sys.executable, ser, "--lib", lib, "--python", py, "--fakecuda", fake,
                        "--gil-regime", "nogil"], (0,)
    # link_stress: 1 is a TypeError without the note, which link_stress's
    # docstring counts as a known limit (a call reading self.nargs in run()
    # right after setting it, not tuning yet: 1 in about 4,500; under TSan's
    # slowdown 1 in 82, at the model's Autotuner.run); 2, a run that ended without its
    # counts (a crash), fails.
    yield "link_stress", [sys.executable, os.path.join(ROOT, "bench", "link_stress.py"), "--runs", "2", "--rounds",
                          "6", "--threads", "8", "--calls", "4", "--python", py, "--lib", lib, "--fakecuda", fake], (0, 1)
    yield "soak", [sys.executable, os.path.join(ROOT, "bench", "soak.py"), "--lib", lib, "--python", py,
                   "--threads", "8", "--instances", "6", "--calls", "300", "--watchdog", "300"], (0,)


# TSAN_OPTIONS beyond the log and the suppressions.  exitcode=0: a report
# leaves the program's exit status alone (the programs check their children's;
# the reports are counted here).  report_thread_leaks=0: the programs leave
# daemon threads running at exit.  intercept_tls_get_addr=0: GCC 12's runtime,
# at a thread's first access to the dynamic TLS of a library loaded after the
# thread started (libdw, which the symbolizer loads at the first report),
# takes a wrong block size and dies ("failed to allocate 0x1fe9dccc7e000
# bytes", serialize's third_entrant.py every time).  handle_segv=0 and the
# others: the programs that crash on purpose (race_segv.py, crash_together.py)
# check tunerguard's fatal-signal report and the death by the signal, which
# TSan's own handler would take first (ThreadSanitizer:DEADLYSIGNAL, exit 0).
TSAN_FLAGS = ("exitcode=0:halt_on_error=0:die_after_fork=0:report_signal_unsafe=0:history_size=6:"
              "report_thread_leaks=0:intercept_tls_get_addr=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:"
              "handle_sigill=0")
# What TSan's runtime writes when it ends a process itself (not a report).
RUNTIME_ERROR = re.compile(r"^==\d+==(?:ERROR: ThreadSanitizer|ThreadSanitizer: |.*CHECK failed)(.*)$", re.M)
# One of them is expected: a fork child of a process with threads that starts
# a thread (serialize's fork_in_report.py) finds the parent's threads still
# in the runtime's registry ("dup thread with used id", with die_after_fork=0)
# and is ended, exit status 0.  What that child does is not checked here.
FORK_CHILD = "dup thread with used id"


def runtime_errors(files):
    """TSan's own fatal errors in the logs: [(file, line)], the fork children's apart."""
    errs, forked = [], []
    for f in files:
        with open(f, errors="replace") as fh:
            for m in RUNTIME_ERROR.finditer(fh.read()):
                (forked if FORK_CHILD in m.group(0) else errs).append((os.path.basename(f), m.group(0)))
    return errs, forked


def reports(files):
    """Each TSan report: (kind, the first own frame of each of its stacks, the text)."""
    for f in files:
        with open(f, errors="replace") as fh:
            text = fh.read()
        for block in re.split(r"^={18}\n", text, flags=re.M):
            m = re.search(r"WARNING: ThreadSanitizer: ([^(\n]+)", block)
            if not m:
                continue
            sides = []
            for stack in block.split("\n\n"):
                hit = own_frame(ln for ln in stack.splitlines() if FRAME.match(ln))
                if hit and " created " not in stack.splitlines()[0]:
                    sides.append(hit)
            yield m.group(1).strip(), sides, block


def own_frame(frames):
    """The first frame of tunerguard's own code in a stack (its module is one
    of the two libraries; the path as the compiler wrote it, absolute or, with
    ccache's base directory, relative): (where, folder), or None."""
    for ln in frames:
        m = FRAME.match(ln)
        if not re.match(r"libtunerguard(_core)?\.so\+", os.path.basename(m.group(4))):
            continue
        parts = os.path.normpath(m.group(2)).split(os.sep)
        for i in range(len(parts) - 1, -1, -1):
            if parts[i] in OWN_DIRS:
                rel = "/".join(parts[i:])
                return f"{m.group(1)} {rel}:{m.group(3)}", parts[i]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--fakecuda", required=True)
    ap.add_argument("--tsan-rt", default="/usr/lib/x86_64-linux-gnu/libtsan.so.2")
    ap.add_argument("--only", default="", help="comma-separated program names (prefixes)")
    ap.add_argument("--keep", help="write TSan's logs here (default: a temporary folder, removed)")
    a = ap.parse_args()
    for what, path in (("interpreter", a.python), ("ThreadSanitizer runtime", a.tsan_rt)):
        if not os.path.exists(path):
            print(f"skipped: the {what} {path} is not there")
            return 77
    lib = f"{a.tsan_rt}:{os.path.abspath(a.lib)}"
    tmp = a.keep or tempfile.mkdtemp(prefix="tg-tsan-")
    os.makedirs(tmp, exist_ok=True)
    only = [x for x in a.only.split(",") if x]
    failed = 0
    for name, argv, passing in programs(a, lib):
        if only and not any(name.startswith(o) for o in only):
            continue
        log = os.path.join(tmp, name.replace("/", "_"))
        env = dict(os.environ, PYTHON_GIL="0",
                   TSAN_OPTIONS=f"log_path={log}:suppressions={os.path.join(HERE, 'tsan.supp')}:{TSAN_FLAGS}")
        out = ""
        try:
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
            status, ok, out = f"exit {p.returncode}", p.returncode in passing, p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            status, ok = "timed out (900 s)", False
        n = sum(1 for _ in reports(glob.glob(log + ".*")))
        errs, forked = runtime_errors(glob.glob(log + ".*"))
        print(f"{name}: {status}; {n} TSan report{'' if n == 1 else 's'}"
              + (f"; {len(forked)} fork child{'' if len(forked) == 1 else 'ren'} ended by TSan ({FORK_CHILD})"
                 if forked else ""))
        for f, line in errs:
            print(f"FAIL {name}: TSan's runtime ended a process ({f}): {line}")
        if not ok:
            print(f"FAIL {name}: {status}, {' or '.join(map(str, passing))} expected; its output's tail:\n"
                  f"{out[-4000:]}")
        failed += (not ok) + len(errs)
        sys.stdout.flush()
    own = collections.OrderedDict()
    other = collections.Counter()
    for kind, sides, block in reports(glob.glob(os.path.join(tmp, "*.*"))):
        if not sides:
            other[kind] += 1
            continue
        key = (kind, " <-> ".join(sorted(set(w for w, _ in sides))), "+".join(sorted(set(f for _, f in sides))))
        own.setdefault(key, block)
    if other:
        print(f"{sum(other.values())} reports without a frame of tunerguard's (CPython's or the driver's own, "
              f"unsuppressed): " + ", ".join(f"{k} x{v}" for k, v in other.items()))
    for (kind, where, folders), block in own.items():
        print(f"TSAN {folders}: {kind}: {where}")
    if own and os.environ.get("TG_TSAN_VERBOSE"):
        for block in own.values():
            print(block)
    print(f"logs: {tmp}" if a.keep else "")
    return 1 if own or failed else 0


if __name__ == "__main__":
    sys.exit(main())
