"""Autotuner with the shape tunerguard guards and marks (run, warmup, _bench,
prune_configs), run() always on the fast path of a tuned key: it keeps its
arguments on self and clears them, as Triton's does, and never benchmarks.
run(x) with x an Event parks the caller inside until it is set.  Plain has
a copy of the same run function (its code, another function object),
unguarded."""
import threading
import types


def _run(self, x, k=None):
    self.nargs = {"x": x}
    if isinstance(x, threading.Event):
        x.wait()
    self.nargs = None
    return x


class Autotuner:
    def __init__(self):
        self.nargs = None

    run = _run

    def warmup(self, *args, **kwargs):
        return None

    def _bench(self, *args, **kwargs):
        return [0.0]

    def prune_configs(self, kwargs):
        return []


class Plain:  # the same run, unguarded: a function of its own (a guard in a
    # function's vectorcall slot guards every class that holds that function)
    def __init__(self):
        self.nargs = None

    run = types.FunctionType(_run.__code__, globals(), "_run", _run.__defaults__)
