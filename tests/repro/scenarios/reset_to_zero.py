#!/usr/bin/env python3
"""Silent corruption through reset_to_zero (anatomy note §7.1-7.2, §8.4 R3): an
accumulating kernel (out += x) tuned with reset_to_zero=["out"], tensors passed
positionally, each thread with its own `out`. The failure is WRONG NUMBERS, no
exception.

Forced overlap, in this order:
  1. main tunes key n=8 (gate closed);
  2. the tuner thread calls with n=4 (a new key): W1 sets self.nargs to ITS
     tensors, it tunes, and parks in the first synchronize of config 0;
  3. the fast thread calls with n=8 (already tuned): W1 sets self.nargs to ITS
     tensors, and its launch is held (the hold in the kernel body stands for a
     launch that has not returned yet: the thread sits between W1 and W2 with the
     GIL released, as after Py_BEGIN_ALLOW_THREADS in Triton's launcher);
  4. the gate opens: the tuner's remaining _bench calls snapshot the fast
     thread's tensors (RB), so reset_to_zero zeroes the fast thread's `out`
     while the tuner's own `out` is never reset and accumulates over every
     benchmark launch; benchmark()'s final reset (R4/H1) also hits the wrong
     tensor; the tuner returns normally with out = k * x, k > 1;
  5. the hold is released, the fast thread finishes.

Correct result: every `out` equals its `x` exactly.
"""
import threading

import _harness

h = _harness.Harness("reset_to_zero", __doc__)

import triton  # noqa: E402  (the model or a release: _which_triton)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

hold_release = threading.Event()
held_thread = {}


def launch_hold():
    """Hold the designated thread inside its launch until main releases it."""
    w = h.current_worker()
    if w is None or held_thread.get("w") is not w or hold_release.is_set():
        return
    w.settle("held inside its kernel launch")
    if not hold_release.wait(_harness.SAFETY_TIMEOUT_S):
        raise RuntimeError("launch hold never released")


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (4, 8) for w in (2, 4)],
    key=["n"],
    reset_to_zero=["out"],
)
@triton.jit
def accumulate_kernel(out, x, n, BLOCK: tl.constexpr):
    launch_hold()
    for i in range(n):  # tl.atomic_add(out + offs, x): correct only if `out` starts at zero
        out.data[i] += x.data[i]


def accumulate(n, name, base):
    x = Tensor([base + j for j in range(n)], name=f"x_{name}")
    out = Tensor.zeros(n, name=f"out_{name}")
    h.call(lambda: accumulate_kernel[(1,)](out, x, n))
    return x, out


x, out = accumulate(8, "warm", 100.0)
if out.data != x.data:
    h.fail(f"warm-up call: out = {out.data}, expected {x.data}")

tuner = h.worker("tuner", lambda: accumulate(4, "tuner", 1.0))
fast = h.worker("fast", lambda: accumulate(8, "fast", 10.0))
held_thread["w"] = fast

h.start_victim(tuner)
h.start_and_settle([fast])
h.open_gate()
h.join([tuner])
hold_release.set()
h.join([fast])

h.check_no_exceptions()
for w in (tuner, fast):
    x, out = w.result
    if out.data != x.data:
        ratio = out.data[0] / x.data[0] if x.data[0] else float("nan")
        h.fail(f"wrong numbers in thread {w.name}: out = {out.data}, expected {x.data} "
               f"({ratio:g}x: its out was never reset by reset_to_zero)")
h.passed("every out == x")
