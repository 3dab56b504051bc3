"""Three threads in one targets= tuner (detect): A launched twice in its
session (benchmarking) and waits inside; B entered after it, on a fast path
(no launch), and waits inside too; C enters.  A is still benchmarking: C's
entry is a high-severity race whichever slot B took, and B's too.  A thread
looks for its slot from the one of its tid (tid % 8), so B is made to sit
below A (start_in), and the first occupant found is then B, not A; the exit
status says whether it did.  argv: none."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.slots import start_in  # noqa: E402
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
tuner = Tuner("launched_kernel")
a_in, b_in, release = threading.Event(), threading.Event(), threading.Event()


def a_body():
    for _ in range(2):
        assert cuda.cuLaunchKernel(None, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0
    a_in.set()
    return release.wait(T)


def b_body():
    b_in.set()
    return release.wait(T)


slots = {}
a = start_in("A", lambda: tuner.run(a_body), lambda slot: slot > 0, slots, a_in, T)
b = start_in("B", lambda: tuner.run(b_body), lambda slot: slot < slots["A"], slots, b_in, T)
print("slots A", slots["A"], "B", slots["B"])
r = tuner.run(lambda: "entered")  # C: the main thread
release.set()
a.join(T)
b.join(T)
sys.exit(0 if r == "entered" and slots["B"] < slots["A"] else 1)
