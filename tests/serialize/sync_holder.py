"""Severity from the holder's CUDA record alone: a targets= tuner (no tuning
methods marked, so tunerguard walks the holder's frames for tuning names)
whose holder sits in cuCtxSynchronize (the stand-in libcuda's gate, the GIL
released), called from a body with no tuning-named frame.  A second thread
entering is a high-severity race: a synchronize inside a tuner is
benchmarking.  Needs the stand-in libcuda (LD_LIBRARY_PATH); every wait is
bounded."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
cuda = ctypes.CDLL("libcuda.so.1")  # CDLL: the GIL is released around each call
cuda.fakecuda_gate_wait_parked.argtypes = [ctypes.c_double]
assert cuda.cuInit(0) == 0
tuner = Tuner("synced_kernel")
assert cuda.fakecuda_gate_arm() == 0


def holder_body():
    return cuda.cuCtxSynchronize()  # parks in the gate


h = threading.Thread(target=lambda: tuner.run(holder_body), name="holder")
h.start()
assert cuda.fakecuda_gate_wait_parked(T) == 1, "the holder never reached cuCtxSynchronize"
r = tuner.run(lambda: "entered")
cuda.fakecuda_gate_open()
h.join(T)
print("result", r, "holder done", not h.is_alive())
sys.exit(0 if r == "entered" and not h.is_alive() else 1)
