#!/usr/bin/env python3
"""Tuning interference: thread "tuner" benchmarks an autotuned kernel on fake
device 0 while thread "hammer" launches a plain kernel 20 times, on device 0
(--same-device: the benchmark's timings are taken under load; tunerguard must
write one interference report) or on device 1 (--other-device: no report).

Forced overlap, no sleeps: the gate of the stand-in libcuda parks the tuner in
its first benchmark synchronize (it is benchmarking by then); the hammer
launches while it is parked; then the gate opens.  Exit status 0 when both
threads finished, 2 when the choreography could not run.
"""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "model"))

import triton  # noqa: E402  (the model)
from triton.runtime.driver import driver  # noqa: E402

same = "--same-device" in sys.argv
lib = ctypes.CDLL("libcuda.so.1")
lib.fakecuda_ctx.restype = ctypes.c_void_p
lib.fakecuda_ctx.argtypes = [ctypes.c_int]
lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
lib.fakecuda_gate_wait_parked.argtypes = [ctypes.c_double]


@triton.autotune(configs=[triton.Config({"N": n}) for n in range(3)], key=[])
@triton.jit
def tuned_kernel(N: triton.language.constexpr = 0):
    pass


@triton.jit
def hammer_kernel():
    pass


errors = []


def tuner():
    try:
        lib.cuCtxSetCurrent(lib.fakecuda_ctx(0))
        tuned_kernel[(1,)]()
    except BaseException as e:  # noqa: B902
        errors.append(e)


def hammer():
    try:
        lib.cuCtxSetCurrent(lib.fakecuda_ctx(0 if same else 1))
        for _ in range(20):
            hammer_kernel[(1,)]()
    except BaseException as e:  # noqa: B902
        errors.append(e)


driver.active.lib  # load libcuda (cuInit) before the gate
lib.fakecuda_gate_arm()
t = threading.Thread(target=tuner, name="tuner")
t.start()
if not lib.fakecuda_gate_wait_parked(30.0):
    sys.stderr.write("repro interference: harness: the tuner never parked in the gate\n")
    sys.exit(2)
h = threading.Thread(target=hammer, name="hammer")
h.start()
h.join()
lib.fakecuda_gate_open()
t.join()
if errors:
    sys.stderr.write(f"repro interference: FAIL: {errors[0]!r}\n")
    sys.exit(1)
sys.stderr.write(f"repro interference: PASS: best config {tuned_kernel.cache.get(())}\n")
