#!/usr/bin/env python3
"""seeds/004 without any choreography: two threads call one autotuned kernel
with two configs and key=[], at the same time, once.  No gate, no barrier, no
hold: whether the two tuning sessions overlap is left to the scheduler, which
is exactly what stress=1 is for.  run_repro.py runs it under
TUNERGUARD_OPTIONS=mode=detect:stress=1 and expects a race report in every run.

Exit status: 0 both calls returned; 1 a thread raised (the race showed as the
crash); the race report is what the runner checks, not this status.
"""
import os
import sys
import threading
import traceback

import _which_triton  # noqa: E402,F401  (the model, or the release: TG_TRITON_RELEASE)

import triton  # noqa: E402


@triton.autotune(configs=[triton.Config({"N": 0}), triton.Config({"N": 1})], key=[])
@triton.jit
def stress_kernel(N: triton.language.constexpr = 0):
    pass


errors = []


def body():
    try:
        stress_kernel[(1,)]()
    except BaseException as e:  # noqa: B902
        errors.append(e)
        traceback.print_exc()


threads = [threading.Thread(target=body, name=f"worker-{i}") for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    sys.stderr.write(f"repro stress_seeds004: FAIL: {type(errors[0]).__name__}: {errors[0]}\n")
    sys.exit(1)
sys.stderr.write(f"repro stress_seeds004: PASS: best config {stress_kernel.cache.get(())}\n")
