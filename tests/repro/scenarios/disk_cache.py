#!/usr/bin/env python3
"""The race through Triton's disk cache (cache_results=True, as FLA sets for
every kernel): a cold key is tuned inside Autotuner.check_disk_cache, which
finds no <kernel>.autotune.json, runs benchmark() and then writes the file from
self.configs_timings (anatomy note §1.4).

Forced overlap: TRITON_CACHE_DIR is a fresh directory (the working directory
is a new temporary one per run).  worker-0 tunes n=16 and parks in the first
benchmark synchronize, inside check_disk_cache.  Workers 1-3 call with the same
key: self.cache is still cold (R2) and the file is not written yet, so they
tune too, write the file and run W2 (self.nargs = None).  worker-0 resumes and
its next _bench raises TypeError: 'NoneType' object is not a mapping.

Correct result: every y == 3 * x, the key is tuned once, and the file in the
cache directory holds a timing for every config.
"""
import glob
import json
import os

os.environ["TRITON_CACHE_DIR"] = os.path.join(os.getcwd(), "triton-cache")  # before the model reads it

import _harness  # noqa: E402

h = _harness.Harness("disk_cache", __doc__)

import triton  # noqa: E402  (the model or a release: _which_triton)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (16, 32) for w in (2, 4)]


@triton.autotune(configs=CONFIGS, key=["n"], cache_results=True)
@triton.jit
def disk_cache_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = 3.0 * x.data[i]


N = 16
N_THREADS = 4


def make_body(i):
    x = Tensor([float(i + j) for j in range(N)], name=f"x{i}")
    y = Tensor.zeros(N, name=f"y{i}")

    def body():
        h.call(lambda: disk_cache_kernel[(1,)](x, y, N))
        return x, y

    return body


workers = [h.worker(f"worker-{i}", make_body(i)) for i in range(N_THREADS)]
h.overlap(workers)
for w in workers:
    x, y = w.result
    if y.data != [3.0 * v for v in x.data]:
        h.fail(f"{w.name}: y = {y.data}")
if list(disk_cache_kernel.cache) != [(N, "torch.float32", "torch.float32")]:
    h.fail(f"tuned keys {list(disk_cache_kernel.cache)}")
files = glob.glob(os.path.join(os.environ["TRITON_CACHE_DIR"], "*", "disk_cache_kernel.autotune.json"))
if len(files) != 1:
    h.fail(f"expected one disk_cache_kernel.autotune.json in the cache directory, found {len(files)}")
with open(files[0]) as f:
    timed = json.load(f)["configs_timings"]
if len(timed) != len(CONFIGS):
    h.fail(f"the cache file times {len(timed)} configs, expected {len(CONFIGS)}")
h.passed(f"{N_THREADS} threads, key tuned once through check_disk_cache")
