"""Contended calls of a declared tuner (targets=), detect mode: two threads
call one tgfix.tuners.Tuner's run() in a loop, each call releasing the GIL
once inside (time.sleep(0)), so most entries find the other thread inside:
a race, reported once, then counted.  Prints calls/s over both threads.

  TUNERGUARD_OPTIONS=targets=tgfix.tuners:Tuner.run:log_path=/tmp/tgb \\
      LD_PRELOAD=build/libtunerguard.so python bench/declared_contended.py [SECONDS] [--lock] [--overlap N]

--lock: every call made under one threading.Lock (the hand-written fix).
--overlap N: each thread's first N calls meet the other thread inside the call
(a barrier in the body), so at least N overlaps happen however loaded the
machine is; the timed loop follows."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "serialize", "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else 2.0
LOCK = threading.Lock() if "--lock" in sys.argv[1:] else None  # what a user writes instead of serialize
OVERLAP = int(sys.argv[sys.argv.index("--overlap") + 1]) if "--overlap" in sys.argv[1:] else 0
if OVERLAP and LOCK:
    sys.exit("declared_contended.py: --overlap cannot meet inside calls made under --lock")
inside = threading.Barrier(2)
tuner = Tuner("contended_kernel")
start = threading.Barrier(3)
stop = threading.Event()
counts = [0, 0]


def body():
    time.sleep(0)  # releases the GIL inside the call: the other thread enters


def meet():
    inside.wait()  # both threads inside the tuner at once


def loop(i):
    start.wait()
    n = 0
    while n < OVERLAP or not stop.is_set():
        step = meet if n < OVERLAP else body  # one call line: one call site in the report
        if LOCK:
            with LOCK:
                tuner.run(step)
        else:
            tuner.run(step)
        n += 1
    counts[i] = n


threads = [threading.Thread(target=loop, args=(i,)) for i in range(2)]
for t in threads:
    t.start()
start.wait()
t0 = time.perf_counter()
time.sleep(SECONDS)
stop.set()
for t in threads:
    t.join()
dt = time.perf_counter() - t0
print(f"calls/s {sum(counts) / dt:.0f} ({sum(counts)} calls in {dt:.2f} s)")
