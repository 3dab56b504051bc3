"""Eight threads crash at once (after a race was reported): the fatal report
must still be written whole, and the process die by SIGSEGV.  Before, the
threads that lost the race for the report chained at once, and the first of
them killed the process in the middle of the winner's capture: no fatal
block, no fatal record, nothing said.

Ordered with a barrier: the eight threads meet, then each calls
ctypes.memset(0, 0, 1), which lets the GIL go, so the faults really are at
the same time, each 300 Python frames deep (a longer capture for the
others to land in).  A race first (the low-severity overlap of race_segv.py), so
that the fatal handler is installed and there is a report file to append to."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
a = Tuner("crash_together_kernel")
inside, release = threading.Event(), threading.Event()
h = threading.Thread(target=lambda: a.run(lambda: (inside.set(), release.wait(T))), name="holder")
h.start()
inside.wait(T)
a.run(lambda: None)  # the overlap: reported at verbosity=1
release.set()
h.join(T)

meet = threading.Barrier(8)


def crash(depth=300):
    # deep stacks: the report's capture (native and Python stacks of every
    # thread) takes longer, so the other crashes land inside it
    if depth:
        return crash(depth - 1)
    meet.wait(T)
    ctypes.memset(0, 0, 1)


ths = [threading.Thread(target=crash, name=f"crasher{i}") for i in range(8)]
for t in ths:
    t.start()
for t in ths:
    t.join(T)
print("not reached")
