#!/usr/bin/env python3
"""Race-free use of an autotuned kernel: the main thread tunes every key first,
one after the other; only then do 4 threads launch it concurrently (every call
hits the tuned cache: no benchmark, no clearing of the shared arguments).
Under mode=detect:stress=1 tunerguard must report nothing (run_repro.py
expects no report file).  Exit status 0 when every call returned.
"""
import os
import sys
import threading

import _which_triton  # noqa: E402,F401  (the model, or the release: TG_TRITON_RELEASE)

import triton  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

KEYS = ("torch.float32", "torch.float16")


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 32)], key=[])  # the key is then the dtype of x
@triton.jit
def race_free_kernel(x, BLOCK: triton.language.constexpr = 16):
    pass


for dtype in KEYS:  # tune sequentially
    race_free_kernel[(1,)](Tensor([1.0], dtype))

errors = []


def body(i):
    try:
        for _ in range(50):
            race_free_kernel[(1,)](Tensor([float(i)], KEYS[i % 2]))
    except BaseException as e:  # noqa: B902
        errors.append(e)


threads = [threading.Thread(target=body, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    sys.stderr.write(f"repro race_free: FAIL: {errors[0]!r}\n")
    sys.exit(1)
sys.stderr.write(f"repro race_free: PASS: {len(race_free_kernel.cache)} keys tuned\n")
