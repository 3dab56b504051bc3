#!/usr/bin/env python3
"""Soak test of serialize mode.

    soak.py --lib build/libtunerguard.so [--python EXE] [--threads 64]
            [--instances 100] [--calls 10000] [--seed 1] [--nest 0.2]
            [--yield-p 0.05] [--watchdog 900]

Interpretation of "64 threads, 100 tuner instances, 10,000 calls each": each
*instance* receives --calls outermost calls in total (1,000,000 for the
defaults), spread over the threads: every thread makes
instances*calls/threads outer calls (15,625), each on an instance drawn from
its own random.Random(seed, thread).  Inside a call the body, with
probability --nest per level (depth <= 3), calls another random instance's
guarded run() (possibly the same one: nested depth), and with probability
--yield-p releases the GIL (time.sleep(0)) so that other threads run while it
holds the tuner.  Cross-instance nesting in opposite orders makes real cycles
of waits; deadlock=proceed breaks them and they are counted.

The parent (no preload) runs a child under LD_PRELOAD with
TUNERGUARD_OPTIONS=mode=serialize:deadlock=proceed and checks:
  - the child finishes before the watchdog (no deadlock, no hang);
  - per instance, Python-side entries == exits == the number planned by the
    seeded schedule (no lost or extra calls);
  - waits: tunerguard's exit summary "N calls serialized" == the number of
    calls that raised "tunerguard.serialize_wait" audit events in the child
    (one or two: a call may wait for the turn, then for its tuner);
  - cycles: the summary's "N cycles of waits broken" == deadlock records in
    the JSON Lines report;
  - mutual exclusion: overlaps of two threads inside one instance, seen from
    Python, only where a cycle was broken (each broken cycle lets one thread
    in unserialized);
  - memory: VmRSS sampled every --sample outer calls of thread 0 (x = outer
    calls done by all threads then); the least-squares slope over the
    samples of the second half of the run (up to 90 % of the calls: threads
    that finish free their caches) must be below 64 KiB per 100,000
    calls (a leak of one byte per call would show as ~98).  Growth while the
    64 threads start (stacks, malloc arenas) is in the first half, and a
    prevented race before the run (warm_up) pays for what a process's first
    report maps.  One cost
    per thread is taken out first: a thread's first native stack capture (its
    first report) makes libunwind map its per-thread trace cache, 2^14 frames
    of 16 bytes = 256 KiB, all touched, freed at thread exit (libunwind's
    src/x86_64/Gtrace.c); with 64 threads whose first reports come at any
    time in the run that is up to 16 MiB, which would hide a leak of a byte a
    call.  So every worker makes its first capture before its measured calls
    (first_capture: a race serialize prevents, on an instance of its own):
    a capture at a repeated race writes no record, and with the CPU shared
    (ctest -j2 beside the CPython tests) workers' first captures came in the
    second half and added 264 KiB steps to it (slopes of 95 to 1,010 KiB per
    100,000 calls in eight runs).  For
    the captures of other threads, the JSON Lines reports say when (ts_ns,
    CLOCK_MONOTONIC like the samples) each thread first captured; each
    sample's RSS is lowered by
    256 KiB per thread that had captured and not yet finished by then, and
    only when libunwind is mapped in the child (glibc's backtrace, the
    fallback, keeps no such cache).  The raw slope is printed
    too.  The child runs with symbolize=1 (function names, no file:line):
    with file:line, libdw reads line tables as new addresses show up, tens of
    MiB bounded by the debug info, which would hide a leak the same way.
Prints one JSON object with the figures and exits 0 when every check holds."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def guarded(f):
    """tunerguard guards a plain function through its vectorcall slot (its
    trampoline there), or on 3.11 puts a method descriptor in its place.
    tp_vectorcall_offset is the fifth word after the object header (two
    words with a GIL, four in a free-threaded build: object.__basicsize__)."""
    import ctypes
    if type(f).__name__ != "function":
        return True
    word = ctypes.sizeof(ctypes.c_void_p)
    off = ctypes.c_ssize_t.from_address(id(type(f)) + (object.__basicsize__ // word + 5) * word).value
    slot = lambda g: ctypes.c_void_p.from_address(id(g) + off).value  # noqa: E731
    return slot(f) != slot(guarded)


def warm_up(tuner, tls, threading):
    """One race that serialize prevents, before the measured run, on an
    instance of its own: a process's first report maps, once, what every
    report needs (the report record, about 180 KiB, the writers, libunwind's
    state); a first report in the second half of the run (a thread waiting
    for a tuner another thread is inside, as the workload does now and then)
    would show that as growth.  Thread A parks inside the tuner; B enters,
    is reported and waits; B's wait (the audit event, counted in waits_audit
    as the summary counts it) lets A go."""
    inside, b_waits = threading.Event(), threading.Event()

    def hold(self):
        inside.set()
        b_waits.wait(60)

    def a():
        tls.k = 0
        tuner.run(hold)

    def b():
        tls.k, tls.warm = 0, b_waits
        tuner.run(lambda self: None)
        tls.warm = None

    ta = threading.Thread(target=a)
    ta.start()
    inside.wait(60)
    tb = threading.Thread(target=b)
    tb.start()
    ta.join()
    tb.join()


def first_capture(tuner, tls, threading):
    """The calling worker's first native stack capture, before its measured
    calls: it enters `tuner` while a holder thread is inside, a race
    serialize prevents (reported, or counted as a repeat: the capture comes
    first either way), and waits; its wait (the audit event) lets the holder
    go.  The capture maps libunwind's per-thread trace cache (256 KiB, see
    above); a worker whose first capture came in the measured run, at a
    repeat no record shows, would add it to the slope.  With every worker's
    made here, what is mapped per thread is mapped before the run, however
    the scheduler orders the threads."""
    inside, waits = threading.Event(), threading.Event()
    k = tls.k

    def hold(self):
        inside.set()
        waits.wait(60)

    def holder_call():
        tls.k, tls.call = k, -1  # the holder may wait too (for the turn): its call counted as the worker's
        tuner.run(hold)

    holder = threading.Thread(target=holder_call)
    holder.start()
    inside.wait(60)
    tls.call, tls.warm = -1, waits  # one call: counted once, however many waits
    tuner.run(lambda self: None)
    tls.warm = None
    holder.join()


def child(a):
    import random
    import threading

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from soak_tuner import SoakTuner

    if not guarded(SoakTuner.__dict__["run"]):
        print("SoakTuner.run is not guarded: is the preload there?", file=sys.stderr)
        os._exit(4)
    tuners = [SoakTuner(i) for i in range(a.instances)]
    n = a.instances
    per_thread = a.instances * a.calls // a.threads
    entries = [[0] * n for _ in range(a.threads)]
    exits = [[0] * n for _ in range(a.threads)]
    planned = [[0] * n for _ in range(a.threads)]
    overlaps = [0] * a.threads
    waits_seen = [0] * a.threads
    tls = threading.local()
    progress = [0] * a.threads
    finished_ns = [0] * a.threads
    rss = []

    def hook(event, args):
        if event == "tunerguard.serialize_wait":
            # one per call, as the summary counts: a call may wait for the
            # turn and then for its tuner, an event each
            call = getattr(tls, "call", None)
            if call is None or call != getattr(tls, "counted", None):
                waits_seen[tls.k] += 1
                tls.counted = call
            if getattr(tls, "warm", None):
                tls.warm.set()

    sys.addaudithook(hook)
    warm_up(SoakTuner(-1), tls, threading)

    def vmrss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def worker(k):
        tls.k = k
        first_capture(SoakTuner(-2 - k), tls, threading)
        rnd = random.Random(a.seed * 1000003 + k)
        me = threading.get_ident()
        ent, ex, ovl = entries[k], exits[k], overlaps

        def body(self, depth):
            i = self._i
            ent[i] += 1
            if self.owner is not None and self.owner != me:
                ovl[k] += 1
            prev_owner = self.owner
            self.owner = me
            if rnd.random() < a.yield_p:
                time.sleep(0)  # release the GIL while holding the tuner
            if depth < 3 and rnd.random() < a.nest:
                j = rnd.randrange(n)
                planned[k][j] += 1
                tls.call += 1
                tuners[j].run(body, depth + 1)
            self.owner = prev_owner if prev_owner == me else None
            ex[i] += 1

        tls.call = 0
        for c in range(per_thread):
            j = rnd.randrange(n)
            planned[k][j] += 1
            tls.call += 1
            tuners[j].run(body, 0)
            progress[k] = c + 1
            if k == 0 and c % a.sample == 0:
                rss.append((sum(progress), vmrss(), time.monotonic_ns()))
        finished_ns[k] = time.monotonic_ns()  # its trace cache (if any) is freed at exit, just after

    done = threading.Event()

    def watchdog():
        if not done.wait(a.watchdog):
            print("WATCHDOG: no progress for %d s; progress=%d" % (a.watchdog, sum(progress)), file=sys.stderr,
                  flush=True)
            import faulthandler
            faulthandler.dump_traceback(all_threads=True)
            os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    t0 = time.monotonic()
    rss.append((0, vmrss(), time.monotonic_ns()))
    ths = [threading.Thread(target=worker, args=(k,), name="soak-%d" % k) for k in range(a.threads)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    dt = time.monotonic() - t0
    done.set()
    rss.append((sum(progress), vmrss(), time.monotonic_ns()))
    tot = lambda m: [sum(m[k][i] for k in range(a.threads)) for i in range(n)]  # noqa: E731
    out = {"seconds": round(dt, 2), "entries": tot(entries), "exits": tot(exits), "planned": tot(planned),
           "overlaps": sum(overlaps), "waits_audit": sum(waits_seen), "rss": rss,
           "outer_calls": a.threads * per_thread, "finished_ns": finished_ns,
           "libunwind_mapped": "libunwind" in open("/proc/self/maps").read()}
    print("SOAK " + json.dumps(out), flush=True)


UNW_TRACE_CACHE_KIB = 256  # libunwind's per-thread trace cache (see the docstring)


def slope(points):
    """Least squares KiB per call."""
    if len(points) < 3:
        return 0.0
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def parent(a):
    tmp = tempfile.mkdtemp(prefix="tg-soak-")
    prefix = os.path.join(tmp, "tg")
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.lib),
               TUNERGUARD_OPTIONS="mode=serialize:deadlock=proceed:symbolize=1:log_path=%s:targets=soak_tuner:SoakTuner.run"
               % prefix)
    argv = [a.python, os.path.abspath(__file__), "--child"] + [
        "--%s=%s" % (k.replace("_", "-"), v) for k, v in vars(a).items()
        if k not in ("child", "lib", "python")]
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=a.watchdog + 60)
    wall = time.monotonic() - t0
    m = re.search(r"^SOAK (.*)$", p.stdout, re.M)
    if not m:
        print("FAIL: the child gave no result (rc=%s)\n%s\n%s" % (p.returncode, p.stdout, p.stderr[-4000:]))
        return 1
    r = json.loads(m.group(1))
    sw = re.search(r"(\d+) calls? serialized", p.stderr)
    cy = re.search(r"(\d+) cycles? of waits broken", p.stderr)
    waits_summary = int(sw.group(1)) if sw else 0
    cycles_summary = int(cy.group(1)) if cy else 0
    kinds = [json.loads(line)["kind"] for f in glob.glob(prefix + ".*.jsonl") for line in open(f)]
    first_capture = {}  # tid -> ts_ns of its first report with a native stack of its own
    for f in glob.glob(prefix + ".*.jsonl"):
        for line in open(f):
            rec = json.loads(line)
            e = rec.get("entering") or {}
            if e.get("native"):  # its own capture (view of the calling thread)
                first_capture[e["tid"]] = min(first_capture.get(e["tid"], rec["ts_ns"]), rec["ts_ns"])
    # Threads whose cache was mapped at time ts: first capture before it, not
    # finished yet.  Only when libunwind is the unwinder (glibc's backtrace,
    # its fallback, keeps no per-thread cache).
    caps = list(first_capture.values())
    fin = sorted(r["finished_ns"])
    per_thread_kib = UNW_TRACE_CACHE_KIB if r["libunwind_mapped"] else 0

    def live_caches(ts):
        # Reports name OS tids, finish times are per worker: count both.  A
        # finished thread that never captured makes this too small, so the
        # correction errs towards a higher slope (a false alarm, never a
        # hidden leak).
        return max(0, sum(1 for c in caps if c <= ts) - sum(1 for f in fin if f <= ts))

    rss = [(x, k - per_thread_kib * live_caches(ts), k) for x, k, ts in r["rss"]]
    inrun = rss[1:-1]  # thread 0's samples while all threads run (not the start, not after join)
    # The second half, less its last tenth: threads that finish free their
    # trace caches, which would pull the slope down.
    half = [pt for pt in inrun if r["outer_calls"] * 0.5 <= pt[0] <= r["outer_calls"] * 0.9]
    raw_half = [(x, raw) for x, _, raw in half]
    figures = {
        "command": " ".join(["bench/soak.py"] + argv[3:]),
        "python": a.python, "wall_s": round(wall, 1), "run_s": r["seconds"],
        "outer_calls": r["outer_calls"], "guarded_calls": sum(r["entries"]),
        "calls_per_instance_min_max": [min(r["planned"]), max(r["planned"])],
        "waits_summary": waits_summary, "waits_audit": r["waits_audit"],
        "cycles_broken_summary": cycles_summary, "deadlock_records_jsonl": kinds.count("deadlock"),
        "overlaps_seen_in_python": r["overlaps"],
        "rss_kib_before_threads_first_last_in_run_after_join": [rss[0][2], inrun[0][2] if inrun else -1,
                                                                inrun[-1][2] if inrun else -1, rss[-1][2]],
        "rss_kib_peak": max(pt[2] for pt in rss), "rss_samples_in_run": len(inrun),
        "rss_samples_2nd_half": len(half),
        "threads_with_libunwind_trace_cache": len(caps) if r["libunwind_mapped"] else 0,
        "rss_slope_kib_per_100k_calls_2nd_half_raw": round(slope(raw_half) * 1e5, 2),
        "rss_slope_kib_per_100k_calls_2nd_half": round(slope([(x, k) for x, k, _ in half]) * 1e5, 2),
        "child_rc": p.returncode,
    }
    checks = {
        "finished before the watchdog, rc 0": p.returncode == 0,
        "per instance: entries == exits == planned": r["entries"] == r["exits"] == r["planned"],
        "waits: summary == audit events": waits_summary == r["waits_audit"],
        "cycles: summary == deadlock records": cycles_summary == kinds.count("deadlock"),
        "overlaps only where a cycle was broken": r["overlaps"] <= cycles_summary,
        "memory flat: 2nd-half RSS slope < 64 KiB per 100k calls":
            figures["rss_slope_kib_per_100k_calls_2nd_half"] < 64,
    }
    print(json.dumps(figures, indent=1))
    for k, v in checks.items():
        print("%s %s" % ("PASS" if v else "FAIL", k))
    if not all(checks.values()):
        print(p.stderr[-3000:])
    return 0 if all(checks.values()) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--instances", type=int, default=100)
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nest", type=float, default=0.2)
    ap.add_argument("--yield-p", type=float, default=0.05)
    ap.add_argument("--sample", type=int, default=250)
    ap.add_argument("--watchdog", type=int, default=900)
    a = ap.parse_args()
    if a.child:
        child(a)
        return 0
    if not a.lib:
        ap.error("--lib is required")
    if not os.path.exists(a.python):
        print("skipped: %s not installed" % a.python)
        return 77
    return parent(a)


if __name__ == "__main__":
    sys.exit(main())
