"""Thread A is inside a tuner's benchmark, blocked in a CUDA call (the
stand-in libcuda's gate parks its cuCtxSynchronize, with the thread state
detached: ctypes.CDLL); the main thread enters the same tuner.  The race
report shows A's Python stack down to the benchmark function that made the
call.  Every wait is bounded."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, sys.argv[1])  # the integration tests' model of Triton
from triton.runtime.autotuner import Autotuner  # noqa: E402

T = 20.0
cuda = ctypes.CDLL("libcuda.so.1")  # CDLL: the thread state is detached around each call
cuda.fakecuda_gate_wait_parked.argtypes = [ctypes.c_double]
assert cuda.cuInit(0) == 0


def my_kernel(*args, **kwargs):
    return "ok"


def benchmark_in_driver(tuner, tag):  # the hook, called from Autotuner._bench
    if tag == "A":
        cuda.cuCtxSynchronize()  # parks in the gate


def thread_a_caller():
    tuner.run("A")


tuner = Autotuner(my_kernel, benchmark_in_driver)
assert cuda.fakecuda_gate_arm() == 0
a = threading.Thread(target=thread_a_caller, name="A")
a.start()
assert cuda.fakecuda_gate_wait_parked(T) == 1, "A never reached cuCtxSynchronize"
r = tuner.run("B")
cuda.fakecuda_gate_open()
a.join(T)
gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
print("DONE", r, "A done", not a.is_alive(), "GIL", gil)
