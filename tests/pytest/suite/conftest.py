"""A kernel library's test suite in miniature, on a real Triton release.

The release's own triton.autotune and Autotuner drive stand-in kernels and a
stand-in driver (tests/repro/standin/triton_standin.py; the stand-in
libcuda.so.1 is on LD_LIBRARY_PATH), so the suite runs on a CPU.  Run with
pytest-run-parallel (--parallel-threads=N): every test body runs in N threads.

The racing tests force the overlap with no sleeps (Meeting): the first thread
to call the kernel (the leader) tunes it alone until it has finished one
benchmark (it launched and synchronized inside the tuner); then the other
threads call it, and the leader waits there until each of them has settled:
its kernel call returned or raised, or it waits in tunerguard (serialize mode,
the "tunerguard.serialize_wait" audit event).  Without tunerguard the other
threads' calls tune and return, each one clearing the Autotuner's self.nargs,
and the leader's next benchmark reads None: TypeError: 'NoneType' object is not
a mapping.  Under serialize they wait for the leader instead, then find the key
tuned.
"""
import os
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SRC, "tests", "repro", "standin"))
import triton_standin  # noqa: E402

triton_standin.install()

SAFETY_TIMEOUT_S = 30.0


class Meeting:
    """The choreography above, re-armed by each racing test's `meeting` fixture."""

    def __init__(self):
        self.cond = threading.Condition()
        self.arm(1)
        sys.addaudithook(self._audit)

    def arm(self, threads):
        with self.cond:
            self.threads, self.leader, self.benchmarked, self.settled = threads, None, False, set()

    def _audit(self, event, args):
        if event == "tunerguard.serialize_wait":
            self.settle()

    def settle(self):
        with self.cond:
            if threading.get_ident() != self.leader:
                self.settled.add(threading.get_ident())
                self.cond.notify_all()

    def _wait(self, pred, what):
        if not self.cond.wait_for(pred, SAFETY_TIMEOUT_S):
            raise RuntimeError("suite harness: %s within %.0f s" % (what, SAFETY_TIMEOUT_S))

    def after_benchmark(self):
        """Called by the suite's do_bench after each benchmark: the leader's first
        lets the others in and waits until they have settled."""
        with self.cond:
            if self.leader != threading.get_ident() or self.benchmarked:
                return
            self.benchmarked = True
            self.cond.notify_all()
            self._wait(lambda: len(self.settled) >= self.threads - 1,
                       "only %d of %d other threads settled" % (len(self.settled), self.threads - 1))

    def call(self, fn):
        """One thread's kernel call: the leader's at once, the others' once the
        leader has benchmarked; it settles when the call ends, however it ends."""
        with self.cond:
            if self.threads > 1 and self.leader is None:
                self.leader = threading.get_ident()
            elif self.threads > 1:
                self._wait(lambda: self.benchmarked, "the leading thread did not benchmark")
        try:
            return fn()
        finally:
            self.settle()


MEETING = Meeting()


def do_bench(fn, *args, **kwargs):
    ms = triton_standin.do_bench(fn, *args, **kwargs)
    MEETING.after_benchmark()
    return ms


@pytest.fixture
def meeting(num_parallel_threads):
    MEETING.arm(num_parallel_threads)
    yield MEETING
    MEETING.arm(1)


def pytest_configure(config):
    # for the runs without the plugin (-p no:tunerguard), which then knows no such marker
    config.addinivalue_line("markers", "tunerguard_known_race(reason): known to race in a Triton tuner")
