#!/usr/bin/env python3
"""Start-up cost of the preload in processes with nothing to guard.

  bench/startup.py [--rounds N] [--python EXE] LIB [LIB...]

For `PYTHON -c pass` and `/bin/true`, runs the command without a preload and
with each LIB as LD_PRELOAD, interleaved round by round (so drift on a noisy
machine hits every variant alike), and prints for each the median wall time
from fork to exit (ms), the median CPU time (user + system from wait4, ms:
far steadier than wall time on a loaded machine) and the median peak RSS
(ru_maxrss, KiB), with the differences to no preload.  Each run goes through bench/run_once.c, built
static here (cc -O2 -static): forked from this Python, the child's ru_maxrss
would count this process's pages before exec.  TUNERGUARD_OPTIONS and
PYTHONPATH are cleared; the commands run from a temporary directory.

Each LIB is first written back, dropped from the page cache and read back
whole, so that every variant's pages are cached alike: a library the linker
or cp has just written maps more of its pages per fault than one read back
from disk (on the development VM: 27 pages of text where a read-back copy
maps 16), so the comparison would measure how each file got into the cache."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile


RUN_ONCE = None


def once(argv, env):
    p = subprocess.run([RUN_ONCE, *argv], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"startup: {argv} with {env.get('TG_CHILD_PRELOAD', 'no preload')}: {p.stderr.strip()}")
    ms, kib, cpu = p.stdout.split()
    return float(ms), int(kib), float(cpu)


def recache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("libs", nargs="+")
    a = ap.parse_args()
    global RUN_ONCE
    tmp = tempfile.mkdtemp(prefix="tg-startup-")
    RUN_ONCE = os.path.join(tmp, "run_once")
    subprocess.run(["cc", "-O2", "-static", "-o", RUN_ONCE,
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_once.c")], check=True)
    base = {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "TUNERGUARD_OPTIONS", "PYTHONPATH", "TG_CHILD_PRELOAD")}
    variants = [("none", base)] + [(lib, dict(base, TG_CHILD_PRELOAD=os.path.abspath(lib))) for lib in a.libs]
    for lib in a.libs:
        recache(lib)
    os.chdir(tmp)
    for cmd in ([a.python, "-c", "pass"], ["/bin/true"]):
        res = {name: ([], [], []) for name, _ in variants}
        for _ in range(5):  # warm the page cache
            for name, env in variants:
                once(cmd, env)
        for _ in range(a.rounds):
            for name, env in variants:
                ms, kib, cpu = once(cmd, env)
                res[name][0].append(ms)
                res[name][1].append(kib)
                res[name][2].append(cpu)
        print(f"\n{' '.join(cmd)}  ({a.rounds} rounds, medians)")
        print("| preload | wall ms | added | CPU ms | added | RSS KiB | added |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        ms0, kib0, cpu0 = (statistics.median(x) for x in res["none"])
        for name, _ in variants:
            ms, kib, cpu = (statistics.median(x) for x in res[name])
            print(f"| {name} | {ms:.3f} | {ms - ms0:+.3f} | {cpu:.3f} | {cpu - cpu0:+.3f} | {kib:.0f} | "
                  f"{kib - kib0:+.0f} |")


if __name__ == "__main__":
    main()
