#!/usr/bin/env python3
"""Host launch latency: ns per launch of a tiny Triton kernel and of a tiny
torch op (cudart -> cuGetProcAddress pointers), best of several rounds.
Run once with and once without the preload; tests/gpu/run_gpu_all.sh
alternates them and prints the ratio."""
import json
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def nop(x_ptr):
    pass


x = torch.zeros(16, device="cuda")
nop[(1,)](x)
torch.cuda.synchronize()


def bench(f, n=20000, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            f()
        t1 = time.perf_counter_ns()
        torch.cuda.synchronize()
        best = min(best, (t1 - t0) / n)
    return best


print(json.dumps({"preloaded": "libtunerguard" in open("/proc/self/maps").read(),
                  "triton_ns": bench(lambda: nop[(1,)](x)), "torch_add_ns": bench(lambda: x.add_(1))}))
sys.exit(0)
