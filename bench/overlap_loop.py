#!/usr/bin/env python3
"""The cost of a tuned call that overlaps another call of the same tuner.

  PYTHON_GIL=0 LD_PRELOAD=build/libtunerguard.so TUNERGUARD_OPTIONS=mode=detect \\
      python3.13t bench/overlap_loop.py [N]

A model of Triton's Autotuner (tests/integration/fixtures) subclassed as
Triton's run() is on a tuned key: self.nargs written, the config looked up,
the launch, self.nargs = None.  One thread's call parks inside its launch
(an event); the main thread then calls the same key N times (default 50,000),
every call an overlap, then N times more alone.  Prints the main thread's
wall and CPU time per overlapped call, and its wall time per call alone.
Without the GIL detect reports each overlap as a race (docs/free-threading.md,
"Overlaps on tuned keys without the GIL"): the first is captured, the rest
are counted as its repeats (guard/race_again.c)."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration",
                                "fixtures"))
from triton.runtime.autotuner import Autotuner  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
parked, release = threading.Event(), threading.Event()


class Tuner(Autotuner):
    cache = None

    def run(self, tag):
        self.nargs = {0: tag}
        try:
            if self.cache is None:
                self._bench(tag)  # tuned once, alone
                self.cache = {"key": "config"}
            call = {**self.nargs, "config": self.cache["key"]}
            if tag == "victim":
                parked.set()
                release.wait(60)  # inside its launch
            return self.fn(call)
        finally:
            self.nargs = None


tuner = Tuner(lambda call: call)
tuner.run("warm")


def loop(n):
    for _ in range(n):
        tuner.run("main")


loop(1000)
victim = threading.Thread(target=tuner.run, args=("victim",), name="victim")
victim.start()
assert parked.wait(20), "the victim never got inside"
loop(1000)
t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
loop(N)
wall, cpu = time.perf_counter_ns() - t0, time.thread_time_ns() - c0
release.set()
victim.join()
t0 = time.perf_counter_ns()
loop(N)
alone = time.perf_counter_ns() - t0
print("overlapped: %.0f ns/call (cpu %.0f), alone: %.0f" % (wall / N, cpu / N, alone / N))
