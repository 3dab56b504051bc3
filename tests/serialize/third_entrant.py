"""Three threads in one targets= tuner (detect): A launched twice in its
session (benchmarking) and waits inside; B entered after it, on a fast path
(no launch), and waits inside too; C enters.  A is still benchmarking: C's
entry is a high-severity race whichever slot B took, and B's too.  A thread
looks for its slot from the one of its tid (tid % 8), so B is picked (by
starting throw-away threads until the next tid fits) to sit below A: the
first occupant found is then B, not A.  argv: none."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
tuner = Tuner("launched_kernel")
a_in, b_in, release = threading.Event(), threading.Event(), threading.Event()
a_tid = []


def a_body():
    a_tid.append(threading.get_native_id())
    for _ in range(2):
        assert cuda.cuLaunchKernel(None, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0
    a_in.set()
    return release.wait(T)


def b_body():
    b_in.set()
    return release.wait(T)


def next_tid_after(fits):
    """Start throw-away threads until one's tid fits: the next thread most
    likely gets the tid after it (Linux hands tids out in order)."""
    for _ in range(10000):
        probe = []
        th = threading.Thread(target=lambda: probe.append(threading.get_native_id()))
        th.start()
        th.join()
        if fits(probe[0]):
            return
    sys.exit("no thread id fitted in 10000 threads")


next_tid_after(lambda tid: tid % 8 == 6)  # A then most likely in slot 7, so some B can sit below it
a = threading.Thread(target=lambda: tuner.run(a_body), name="A")
a.start()
assert a_in.wait(T)
if a_tid[0] % 8:  # (else A sits in slot 0 and no B can sit below it: the plain case)
    next_tid_after(lambda tid: (tid + 1) % 8 < a_tid[0] % 8)  # B below A
b_tid = []
b = threading.Thread(target=lambda: (b_tid.append(threading.get_native_id()), tuner.run(b_body)), name="B")
b.start()
assert b_in.wait(T)
print("slots A", a_tid[0] % 8, "B", b_tid[0] % 8)
r = tuner.run(lambda: "entered")  # C: the main thread
release.set()
a.join(T); b.join(T)
sys.exit(0 if r == "entered" else 1)
