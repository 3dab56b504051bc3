#!/usr/bin/env python3
"""Race-free use of an autotuned kernel: the main thread tunes every key first,
one after the other, through the tuner; only then do 4 threads launch it
concurrently, each with the configuration the tuner chose for its key, through
the jitted function (the tuner's `fn`).  Not through the tuner: its `run` keeps
the call's arguments on the shared object on every call, cached keys included
(`self.nargs`, set, read, then cleared), so concurrent calls of it race once
threads really run at once (a free-threaded CPython with the GIL off: the
TypeError "'NoneType' object is not a mapping" within a few thousand calls).
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


best = {}
for dtype in KEYS:  # tune sequentially
    race_free_kernel[(1,)](Tensor([1.0], dtype))
    best[dtype] = race_free_kernel.best_config.all_kwargs()

errors = []


def body(i):
    try:
        for _ in range(50):
            race_free_kernel.fn[(1,)](Tensor([float(i)], KEYS[i % 2]), **best[KEYS[i % 2]])
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
