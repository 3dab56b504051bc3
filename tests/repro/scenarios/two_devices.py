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
import sys

import _harness  # puts the model package on sys.path

import triton  # noqa: E402  (the model or a release: _which_triton)
from triton.runtime.driver import driver  # noqa: E402



@triton.autotune(configs=[triton.Config({"B": b}) for b in (1, 2, 3)], key=["n"])
@triton.jit
def two_device_kernel(n, B: triton.language.constexpr = 0):
    pass


@triton.jit
def plain_kernel():
    pass


done = {}


def tuner():
    _harness.use_fake_device(0)
    try:
        two_device_kernel[(1,)](2)  # a new key: tunes, parks in the gate
        done["tuner"] = "ok"
    except BaseException as e:  # noqa: B902 - the race's own failure
        done["tuner"] = f"{type(e).__name__}: {e}"


def dev1():
    _harness.use_fake_device(1)
    if "--no-launch" not in sys.argv:
        plain_kernel[(1,)]()     # its last CUDA call before entering: a launch on device 1
    two_device_kernel[(1,)](1)   # the tuned key: enters the tuner "tuner" is inside
    done["dev1"] = "ok"


driver.active.lib  # load libcuda (cuInit) before the gate
_harness.use_fake_device(1)
two_device_kernel[(1,)](1)  # tune key n=1 on device 1 first, gate closed
_harness.run_parked("two_devices", tuner, dev1)
if done.get("dev1") != "ok":
    sys.stderr.write(f"repro two_devices: harness: thread dev1 did not finish: {done}\n")
    sys.exit(2)
sys.stderr.write(f"repro two_devices: ran: tuner {done.get('tuner')}\n")
