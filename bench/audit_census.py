#!/usr/bin/env python3
"""Audit events per tuned call: without any hook CPython builds no event
arguments; with tunerguard's hook installed it builds them for every event.
Runs bench/serialize_cell.py's steady loop on one thread (after its warm-up)
under a counting sys.addaudithook and prints the events per call.  A
diagnostic for detect's steady-state cost, not a test.

  python3 bench/audit_census.py [--backend cpu|gpu] [--steps N]"""
import collections
import os
import runpy
import sys

counts = collections.Counter()
on = [False]


def hook(event, args):
    if on[0]:
        counts[event] += 1


steps = 2000
argv = [a for a in sys.argv[1:]]
if "--steps" in argv:
    steps = int(argv[argv.index("--steps") + 1])
sys.argv = [os.path.join(os.path.dirname(__file__), "serialize_cell.py"), *argv, "--threads", "1"]
import threading  # noqa: E402

real_barrier = threading.Barrier


class Barrier(real_barrier):  # the timed loop starts after the barrier: count from there
    def wait(self, *a, **k):
        r = super().wait(*a, **k)
        on[0] = True
        return r


threading.Barrier = Barrier
sys.addaudithook(hook)
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
on[0] = False
calls = 2 * steps
print(f"audit events per tuned call ({calls} calls):", file=sys.stderr)
for ev, n in counts.most_common(12):
    print(f"  {n / calls:8.3f}  {ev}", file=sys.stderr)
if not counts:
    print("  none", file=sys.stderr)
