#!/usr/bin/env python3
"""Steady-state throughput of a two-thread loop calling one autotuned kernel
(already tuned) on its own stream each, after warm-up.

  python3 tests/gpu/steady_state.py [--device N --device2 M] [--iters K]

Prints JSON: calls per second over both threads.  tests/gpu/run_gpu_all.sh
runs it without tunerguard, under detect and under serialize, alternating, and
the benchmarks doc states the ratios.  On one GPU both threads use device 0
(two streams); on two GPUs pass --device2 1."""
import argparse
import json
import os
import threading
import time

import torch
import triton
import triton.language as tl

ap = argparse.ArgumentParser()
ap.add_argument("--device", type=int, default=0)
ap.add_argument("--device2", type=int, default=None)
ap.add_argument("--iters", type=int, default=20000)
a = ap.parse_args()
devs = [a.device, a.device if a.device2 is None else a.device2]


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (128, 256, 512, 1024)], key=["n"])
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


xs = [torch.zeros(4096, device=f"cuda:{d}") for d in devs]
grid = lambda m: (triton.cdiv(4096, m["BLOCK"]),)  # noqa: E731
for d, x in zip(devs, xs):
    with torch.cuda.device(d):
        add_one[grid](x, 4096)  # tunes once per device's first call (same key: one tuning)
        x.zero_()  # the tuning benchmarked on it
        torch.cuda.synchronize(d)
start = threading.Barrier(3)


def loop(i):
    d, x = devs[i], xs[i]
    with torch.cuda.device(d), torch.cuda.stream(torch.cuda.Stream()):
        start.wait()
        for _ in range(a.iters):
            add_one[grid](x, 4096)
        torch.cuda.synchronize(d)


th = [threading.Thread(target=loop, args=(i,)) for i in range(2)]
for t in th:
    t.start()
start.wait()
t0 = time.perf_counter()
for t in th:
    t.join()
dt = time.perf_counter() - t0
ok = all(float(x[0].item()) == a.iters for x in xs)
print(json.dumps({"mode": os.environ.get("TUNERGUARD_OPTIONS", "none") if os.environ.get("LD_PRELOAD") else "none",
                  "calls_per_s": round(2 * a.iters / dt), "seconds": round(dt, 3), "correct": ok}))
