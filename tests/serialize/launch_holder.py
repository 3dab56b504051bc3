"""Severity from the holder's launch count alone: a targets= tuner (no tuning
methods marked; no tuning-named frame either) whose holder launched N kernels
in its session (the stand-in libcuda's cuLaunchKernel) and then waits, the
GIL released, while a second thread enters.  Two launches in one session are
benchmarking (a tuner timing its configs): a high-severity race, reported at
verbosity 0.  One launch is a tuned call's fast path: a low-severity overlap,
only counted.  argv[1]: N.  Needs the stand-in libcuda (LD_LIBRARY_PATH);
every wait is bounded."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
N = int(sys.argv[1])
cuda = ctypes.CDLL("libcuda.so.1")  # CDLL: the GIL is released around each call
assert cuda.cuInit(0) == 0
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
tuner = Tuner("launched_kernel")
launched, release = threading.Event(), threading.Event()


def holder_body():
    for _ in range(N):
        assert cuda.cuLaunchKernel(None, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0
    launched.set()
    return release.wait(T)  # inside the session, the GIL released


h = threading.Thread(target=lambda: tuner.run(holder_body), name="holder")
h.start()
assert launched.wait(T), "the holder never launched"
r = tuner.run(lambda: "entered")
release.set()
h.join(T)
print("result", r, "holder done", not h.is_alive())
sys.exit(0 if r == "entered" and not h.is_alive() else 1)
