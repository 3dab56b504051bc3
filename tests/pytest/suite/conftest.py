"""A kernel library's test suite in miniature, on a real Triton release.

The release's own triton.autotune and Autotuner drive stand-in kernels and a
stand-in driver (tests/repro/standin/triton_standin.py; the stand-in
libcuda.so.1 is on LD_LIBRARY_PATH), so the suite runs on a CPU.  Run with
pytest-run-parallel (--parallel-threads=N): every test body runs in N threads.

The racing tests force the overlap with no sleeps (Meeting): the first thread
to finish a benchmark (it launched and synchronized inside the tuner) waits
there until each other thread has settled: its kernel call returned or raised,
or it waits in tunerguard (serialize mode, the "tunerguard.serialize_wait"
audit event).  Without tunerguard the other threads' calls return, each one
clearing the Autotuner's self.nargs, and the waiting thread's next benchmark
reads None: TypeError: 'NoneType' object is not a mapping.
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
        self.threads = 1
        self.victim = None
        self.settled = set()
        self.armed = False
        sys.addaudithook(self._audit)

    def arm(self, threads):
        with self.cond:
            self.threads, self.victim, self.settled, self.armed = threads, None, set(), threads > 1

    def _audit(self, event, args):
        if event == "tunerguard.serialize_wait":
            self.settle()

    def settle(self):
        with self.cond:
            if threading.get_ident() != self.victim:
                self.settled.add(threading.get_ident())
                self.cond.notify_all()

    def after_benchmark(self):
        """Called by the suite's do_bench after each benchmark."""
        with self.cond:
            if not self.armed or self.victim not in (None, threading.get_ident()):
                return
            self.victim = threading.get_ident()
            self.settled.discard(self.victim)
            self.armed = False
            if not self.cond.wait_for(lambda: len(self.settled) >= self.threads - 1, SAFETY_TIMEOUT_S):
                raise RuntimeError("suite harness: %d of %d other threads settled within %.0f s"
                                   % (len(self.settled), self.threads - 1, SAFETY_TIMEOUT_S))

    def call(self, fn):
        """Run one thread's kernel call; it settles when the call ends, however it ends."""
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
