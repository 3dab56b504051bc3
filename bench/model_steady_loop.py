#!/usr/bin/env python3
"""The CPU model's steady state for an instruction count: after a warm-up
that tunes both kernels' keys, THREADS threads (default 1) call two autotuned
kernels (8 configs each, keyed on n, a different n per thread) STEPS times
each.  No timing: run it under valgrind --tool=callgrind with STEPS and
2 x STEPS, and the difference over 2 x STEPS x THREADS calls is what one
tuned call costs, start-up and warm-up left out (docs/benchmarks.md).

  LD_LIBRARY_PATH=build/tests/fakecuda [LD_PRELOAD=build/libtunerguard.so] \\
      python bench/model_steady_loop.py STEPS [THREADS]
"""
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "repro", "model"))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128, 256, 512) for w in (2, 4)]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def add_one(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = x.data[i] + 1.0


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def copy_(y, z, n, BLOCK: tl.constexpr):
    for i in range(n):
        z.data[i] = y.data[i]


steps = int(sys.argv[1])
nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
bufs = [(n, Tensor([float(j) for j in range(n)]), Tensor.zeros(n), Tensor.zeros(n))
        for n in (8 + 8 * i for i in range(nthreads))]


def step(b):
    n, x, y, z = b
    add_one[(1,)](x, y, n)
    copy_[(1,)](y, z, n)


for b in bufs:  # the warm-up: every key tuned, one thread after another
    for _ in range(200 // nthreads):
        step(b)
start = threading.Barrier(nthreads)
errors = []


def body(i):
    start.wait()
    for _ in range(steps):
        step(bufs[i])
    n, x, y, z = bufs[i]
    if z.data != [v + 1.0 for v in x.data]:
        errors.append(f"thread {i}: wrong result")


threads = [threading.Thread(target=body, args=(i,)) for i in range(nthreads)]
for t in threads:
    t.start()
for t in threads:
    t.join()
sys.exit("; ".join(errors) if errors else 0)
