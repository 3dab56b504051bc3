#!/usr/bin/env python3
"""What tunerguard's CUDA hooks record against a known workload (run under the
preload on the GPU machine).

Between two snapshots of tunerguard's per-variant counters
(tunerguard_cuda_count, exported by the library) the script runs exactly:
N launches of an already compiled Triton kernel, M torch.cuda.synchronize()
calls and one cuBLAS matmul.  Prints JSON; exit 1 if a count is off."""
import ctypes
import json
import sys

import torch
import triton
import triton.language as tl

N, M = 50, 20
lib = ctypes.CDLL(None)
try:
    q = lib.tunerguard_cuda_count
except AttributeError:
    print("cuda_counts: not running under libtunerguard.so", file=sys.stderr)
    sys.exit(2)
q.restype = ctypes.c_ulonglong
q.argtypes = [ctypes.c_char_p]
VARIANTS = ["cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
            "cuCtxSynchronize", "cuCtxSynchronize_v2", "cuStreamSynchronize", "cuEventSynchronize",
            "cuMemcpyDtoHAsync_v2", "cuModuleLoadData", "cuModuleGetFunction", "cuLibraryLoadData"]


def snap():
    return {v: q(v.encode()) for v in VARIANTS}


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


x = torch.zeros(1024, device="cuda")
a = torch.randn(256, 256, device="cuda")
b = torch.randn(256, 256, device="cuda")
add_one[(4,)](x, 1024, BLOCK=256)      # compile and load outside the window
c = a @ b                               # cuBLAS handle and workspace outside the window
torch.cuda.synchronize()
s0 = snap()
for _ in range(N):
    add_one[(4,)](x, 1024, BLOCK=256)
s1 = snap()
for _ in range(M):
    torch.cuda.synchronize()
s2 = snap()
c = a @ b
s3 = snap()
torch.cuda.synchronize()
d = lambda s, t: {k: t[k] - s[k] for k in VARIANTS if t[k] != s[k]}  # noqa: E731
res = {"triton_launches": d(s0, s1), "synchronizes": d(s1, s2), "matmul": d(s2, s3),
       "expected": {"triton_launches": N, "synchronizes": M, "matmul_launches": ">=1"},
       "value_ok": float(x[0].item()) == N + 1}
launch_kinds = ("cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz")
ok = (sum(res["triton_launches"].get(k, 0) for k in launch_kinds) == N
      and sum(res["synchronizes"].values()) == M
      and sum(res["matmul"].get(k, 0) for k in launch_kinds) >= 1 and res["value_ok"])
res["ok"] = ok
print(json.dumps(res))
sys.exit(0 if ok else 1)
