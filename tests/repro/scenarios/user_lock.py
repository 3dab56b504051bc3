#!/usr/bin/env python3
"""seeds/001: the program already serializes the tuner itself, with the
five-line monkey-patch people write:

    lock = threading.Lock()
    orig = Autotuner.run
    def wrapped(self, *a, **kw):
        with lock:
            return orig(self, *a, **kw)
    Autotuner.run = wrapped

Six threads tune cold keys of one kernel.  Their results are right, and a
race detector must say so: the threads are never inside the original
Autotuner.run together (a thread that waits on the program's lock is inside
only the wrapper), so detect writes no race report (verbosity=1 says once
that the wrapper serializes the tuner).  With --no-lock the wrapper calls
the original without a lock: it serializes nothing, the race happens
(TypeError) and detect reports it.

Forced overlap: worker-0 tunes first and parks in its first benchmark
synchronize, inside the wrapper (holding the lock, or not); the others then
call, and either block on the program's lock (settled as "user lock wait")
or get into the original.  Correct result: every thread's y == x + 1."""
import threading

import _harness

h = _harness.Harness("user_lock", __doc__, flags=("--no-lock",))

import triton  # noqa: E402  (the model or a release: _which_triton)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402
from triton.runtime.autotuner import Autotuner  # noqa: E402

lock = threading.Lock()
orig = Autotuner.run


def wrapped(self, *a, **kw):
    if h.args.no_lock:
        return orig(self, *a, **kw)
    if not lock.acquire(blocking=False):
        w = h.current_worker()
        if w is not None:
            w.settle("user lock wait")  # blocked on the program's own lock: the harness may go on
        lock.acquire()
    try:
        return orig(self, *a, **kw)
    finally:
        lock.release()


Autotuner.run = wrapped

N_THREADS = 6


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 32, 64, 128)], key=["n"])
@triton.jit
def user_lock_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = x.data[i] + 1.0


def body(i):
    n = 8 + i  # a cold key per thread
    x = Tensor([float(j) for j in range(n)], name=f"x{i}")
    y = Tensor.zeros(n, name=f"y{i}")
    h.call(lambda: user_lock_kernel[(1,)](x, y, n))
    return x, y


workers = [h.worker(f"worker-{i}", lambda i=i: body(i)) for i in range(N_THREADS)]
h.overlap(workers)
for w in workers:
    x, y = w.result
    if y.data != [v + 1.0 for v in x.data]:
        h.fail(f"{w.name}: wrong result {y.data}")
if len(user_lock_kernel.cache) != N_THREADS:
    h.fail(f"expected {N_THREADS} tuned keys, cache holds {len(user_lock_kernel.cache)}")
h.passed(f"{N_THREADS} threads through the program's {'unlocked ' if h.args.no_lock else ''}wrapper")
