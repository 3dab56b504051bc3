"""A race, then a segfault right after it in the thread that came in second,
while the first thread is still inside the tuner.  The race report must be
complete on disk (it is written when the race is seen), followed by the
fatal-signal block, and the process must still die by SIGSEGV.  Ordered with
events only.

argv[1] == "bench": the holder waits inside a function named _bench (what
the detector takes for benchmarking), so the race is high severity and the
fatal record links it; otherwise the overlap is low severity (verbosity=1
reports it) and is not linked."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
a = Tuner("segv_kernel")
inside, never = threading.Event(), threading.Event()


def _bench(fn):  # a tuning function's name: the overlap is high severity
    return fn()


hold = lambda: (inside.set(), never.wait(T))  # noqa: E731
if len(sys.argv) > 1 and sys.argv[1] == "bench":
    h = threading.Thread(target=lambda: a.run(lambda: _bench(hold)), name="holder", daemon=True)
else:
    h = threading.Thread(target=lambda: a.run(hold), name="holder", daemon=True)
h.start()
assert inside.wait(T)
a.run(lambda: ctypes.string_at(0))  # the race is reported on entry; then SIGSEGV
print("not reached")
