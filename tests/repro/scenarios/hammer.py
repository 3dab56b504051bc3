#!/usr/bin/env python3
"""Mixed fast and slow path (anatomy note §8.4 R2, the realistic one): one thread
hammers a key that is already tuned while another thread tunes a new key of the
same kernel. Even the fast path runs W1 (self.nargs = ...) and W2
(self.nargs = None) around its launch.

Forced overlap: the main thread tunes n=16 first. Then the tuner thread calls
with n=32 (a new key), tunes, and parks in its first benchmark synchronize. The
hammer thread then makes HAMMER_CALLS fast-path calls with n=16, each ending in
W2. The tuner resumes and its next _bench raises
    TypeError: 'NoneType' object is not a mapping.

Correct result: every call returns y == 2 * x, and both keys end up tuned.
"""
import _harness

h = _harness.Harness("hammer", __doc__)

import triton  # noqa: E402  (the model or a release: _which_triton)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (16, 32, 64) for w in (2, 4)],
    key=["n"],
)
@triton.jit
def hammer_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = 2.0 * x.data[i]


HAMMER_CALLS = 200
N_WARM, N_NEW = 16, 32


def scale(n, name):
    x = Tensor([float(j) for j in range(n)], name=f"x_{name}")
    y = Tensor.zeros(n, name=f"y_{name}")
    h.call(lambda: hammer_kernel[(1,)](x, y, n))  # positional, as most kernels are called
    return x, y


def ok(x, y):
    return y.data == [2.0 * v for v in x.data]


# Key (16, dtypes) tuned on the main thread, gate closed.
x, y = scale(N_WARM, "warm")
if not ok(x, y):
    h.fail(f"warm-up call gave {y.data}")


def tuner():
    return [scale(N_NEW, "tuner")]


def hammer():
    return [scale(N_WARM, f"hammer{i}") for i in range(HAMMER_CALLS)]


t = h.worker("tuner", tuner)
b = h.worker("hammer", hammer)
h.start_victim(t)
h.start_and_settle([b])
h.open_gate()
h.join([t, b])

h.check_no_exceptions()
for w in (t, b):
    bad = [(x.name, y.data) for x, y in w.result if not ok(x, y)]
    if bad:
        h.fail(f"{w.name}: {len(bad)} wrong result(s), first {bad[0]}")
if len(b.result) != HAMMER_CALLS:
    h.fail(f"hammer made {len(b.result)} calls, expected {HAMMER_CALLS}")
keys = sorted(k[0] for k in hammer_kernel.cache)
if keys != [N_WARM, N_NEW]:
    h.fail(f"tuned keys {keys}, expected {[N_WARM, N_NEW]}")
h.passed(f"{HAMMER_CALLS} fast-path calls while key n={N_NEW} was tuned")
