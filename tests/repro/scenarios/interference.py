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
import sys

import _harness  # puts the model package on sys.path

import triton  # noqa: E402  (the model or a release: _which_triton)
from triton.runtime.driver import driver  # noqa: E402

same = "--same-device" in sys.argv


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
        _harness.use_fake_device(0)
        tuned_kernel[(1,)]()
    except BaseException as e:  # noqa: B902
        errors.append(e)


def hammer():
    try:
        _harness.use_fake_device(0 if same else 1)
        for _ in range(20):
            hammer_kernel[(1,)]()
    except BaseException as e:  # noqa: B902
        errors.append(e)


driver.active.lib  # load libcuda (cuInit) before the gate
_harness.run_parked("interference", tuner, hammer)
if errors:
    sys.stderr.write(f"repro interference: FAIL: {errors[0]!r}\n")
    sys.exit(1)
sys.stderr.write(f"repro interference: PASS: best config {tuned_kernel.cache.get(())}\n")
