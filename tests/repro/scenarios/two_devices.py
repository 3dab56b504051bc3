#!/usr/bin/env python3
"""The seeds' configuration on the stand-in driver: two threads on two devices
share one autotuner.  Thread "tuner" tunes a new key on fake device 0 and
parks in its first benchmark synchronize (cuCtxSynchronize, GIL released);
thread "dev1" first launches a plain kernel on fake device 1, then calls the
already tuned key of the same autotuned kernel, entering the tuner the tuner
thread is inside.

With --no-launch, dev1 makes no CUDA call before it enters (as in a cold
cache, where both threads compile first): the report then names the device
current on it when it entered.

run_repro.py (extra scenarios "two_devices" and "two_devices_no_launch",
mode=detect) then checks the JSON
Lines report: the race names both devices, the entering thread's stream and
launch on device 1, and the synchronize on device 0 the thread inside was
blocked in.

Forced overlap, no sleeps: the gate of the stand-in libcuda parks the tuner;
dev1 runs to its end while it is parked (detect mode never blocks it); then the
gate opens.  The tuner thread may then fail as the race makes it fail
(TypeError from self.nargs = None): that is the finding, not a harness error.
Exit status 0 when both threads ran to their end, 2 when the choreography
could not run.
"""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "model"))

import triton  # noqa: E402  (the model)
from triton.runtime.driver import driver  # noqa: E402

lib = ctypes.CDLL("libcuda.so.1")
lib.fakecuda_ctx.restype = ctypes.c_void_p
lib.fakecuda_ctx.argtypes = [ctypes.c_int]
lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
lib.fakecuda_gate_wait_parked.argtypes = [ctypes.c_double]


@triton.autotune(configs=[triton.Config({"B": b}) for b in (1, 2, 3)], key=["n"])
@triton.jit
def two_device_kernel(n, B: triton.language.constexpr = 0):
    pass


@triton.jit
def plain_kernel():
    pass


done = {}


def tuner():
    lib.cuCtxSetCurrent(lib.fakecuda_ctx(0))
    try:
        two_device_kernel[(1,)](2)  # a new key: tunes, parks in the gate
        done["tuner"] = "ok"
    except BaseException as e:  # noqa: B902 - the race's own failure
        done["tuner"] = f"{type(e).__name__}: {e}"


def dev1():
    lib.cuCtxSetCurrent(lib.fakecuda_ctx(1))
    if "--no-launch" not in sys.argv:
        plain_kernel[(1,)]()     # its last CUDA call before entering: a launch on device 1
    two_device_kernel[(1,)](1)   # the tuned key: enters the tuner "tuner" is inside
    done["dev1"] = "ok"


driver.active.lib  # load libcuda (cuInit) before the gate
lib.cuCtxSetCurrent(lib.fakecuda_ctx(1))
two_device_kernel[(1,)](1)  # tune key n=1 on device 1 first, gate closed
lib.fakecuda_gate_arm()
t = threading.Thread(target=tuner, name="tuner")
t.start()
if not lib.fakecuda_gate_wait_parked(30.0):
    sys.stderr.write("repro two_devices: harness: the tuner never parked in the gate\n")
    sys.exit(2)
d = threading.Thread(target=dev1, name="dev1")
d.start()
d.join()
lib.fakecuda_gate_open()
t.join()
if done.get("dev1") != "ok":
    sys.stderr.write(f"repro two_devices: harness: thread dev1 did not finish: {done}\n")
    sys.exit(2)
sys.stderr.write(f"repro two_devices: ran: tuner {done.get('tuner')}\n")
