"""Two identical classes; the benchmark guards only the first.  run(x) with x
an Event parks the calling thread inside until it is set (guard_bench.py
--inside: every measured call then overlaps another thread's session)."""
import threading


class Guarded:
    def run(self, x, k=None):
        if isinstance(x, threading.Event):
            x.wait()
        return x


class Plain:
    def run(self, x, k=None):
        if isinstance(x, threading.Event):
            x.wait()
        return x
