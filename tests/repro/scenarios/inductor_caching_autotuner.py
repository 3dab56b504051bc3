#!/usr/bin/env python3
"""PyTorch Inductor's CachingAutotuner (torch 2.15.0), from the model in
tests/repro/model_torch (a faithful copy of the class's shape: its docstring says
what it keeps).  One generated kernel with three configs (XBLOCK 8, 16, 32) is
called as Inductor's generated code calls it, `kernel.run(*args, stream=...)`, by
threads with inputs of different sizes: a kernel's device time grows with
|XBLOCK - n|, so the size-8 call's best config is XBLOCK=8, the size-32 calls'
is XBLOCK=32.

Forced overlap: thread 'tuner' (n=8) precompiles the three launchers and parks in
the first benchmark synchronize of autotune_to_one_config.  Threads 'other-1' and
'other-2' (n=32) see three launchers, tune without a lock, keep XBLOCK=32 and
prune self.compile_results to it.  The tuner resumes, picks XBLOCK=8, and
_prune_compile_results_to_launcher raises AssertionError: Autotuned launcher
config does not match any compile result.

Correct result: every y is 2 * x.
"""
import os
import sys

import _harness

h = _harness.Harness("inductor_caching_autotuner", __doc__)
sys.path.insert(0, os.path.join(_harness.REPRO_DIR, "model_torch"))  # the model `torch`; never via PYTHONPATH

import triton  # noqa: E402  (the model, from tests/repro/model)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402
from torch._inductor.runtime.benchmarking import device_clock  # noqa: E402
from torch._inductor.runtime.triton_heuristics import CachingAutotuner  # noqa: E402


@triton.jit
def inductor_pointwise_kernel(x, y, n, XBLOCK: tl.constexpr):
    device_clock.spend(1.0 + abs(XBLOCK - n))
    for i in range(n):
        y.data[i] = 2.0 * x.data[i]


kernel = CachingAutotuner(inductor_pointwise_kernel, [triton.Config({"XBLOCK": b}, num_warps=1) for b in (8, 16, 32)])


def make_body(i, n):
    x = Tensor([float(i + j) for j in range(n)], name=f"x{i}")
    y = Tensor.zeros(n, name=f"y{i}")

    def body():
        h.call(lambda: kernel.run(x, y, n, grid=(1,), stream=0))
        return x, y

    return body


workers = [h.worker("tuner", make_body(0, 8)), h.worker("other-1", make_body(1, 32)),
           h.worker("other-2", make_body(2, 32))]
h.overlap(workers)
for w in workers:
    x, y = w.result
    if y.data != [2.0 * v for v in x.data]:
        h.fail(f"{w.name}: y = {y.data}, expected 2 * {x.data}")
h.passed(f"3 threads through CachingAutotuner.run, tuned to {kernel.launchers[0].config.kwargs}")
