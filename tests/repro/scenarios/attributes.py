#!/usr/bin/env python3
"""What a thread sees of the tuner's attributes after its call (README,
"What serialize writes"): they live on the shared Autotuner, so after two
threads' calls `cache` holds both threads' keys and `best_config` is the
config of the last call of any thread, `nargs` None.

Forced overlap: thread 'first' tunes n=16 and parks in its first benchmark
synchronize; thread 'second' then calls with n=32 (also cold).  Without
tunerguard second tunes too and its return clears self.nargs under first:
    TypeError: 'NoneType' object is not a mapping
Under serialize second waits, runs after first, and the attributes read by
the main thread after both are: cache keys {16, 32}, best_config ==
cache[(32, ...)] (second's call was the last), nargs None; and each thread
read, right after its own call, the best_config of its own key (nobody
called in between: the other had finished, or had not started)."""
import _harness

h = _harness.Harness("attributes", __doc__)

import triton  # noqa: E402  (the model or a release: _which_triton)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (16, 32) for w in (2, 4)], key=["n"])
@triton.jit
def attributes_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = x.data[i] + 1.0


def call(n):
    x = Tensor([float(j) for j in range(n)])
    y = Tensor.zeros(n)
    h.call(lambda: attributes_kernel[(1,)](x, y, n))
    seen = attributes_kernel.best_config  # read right after its own call
    if y.data != [v + 1.0 for v in x.data]:
        h.fail(f"n={n}: wrong result {y.data}")
    return seen


first = h.worker("first", lambda: call(16))
second = h.worker("second", lambda: call(32))
h.start_victim(first)
h.start_and_settle([second])
h.open_gate()
h.join([first, second])
h.check_no_exceptions()
h.check_serialized()
keys = {k[0]: v for k, v in attributes_kernel.cache.items()}
if sorted(keys) != [16, 32]:
    h.fail(f"cache keys {sorted(keys)}, expected [16, 32]")
if attributes_kernel.best_config is not keys[32]:
    h.fail(f"best_config {attributes_kernel.best_config} is not the last call's ({keys[32]})")
if attributes_kernel.nargs is not None:
    h.fail(f"nargs left set: {attributes_kernel.nargs!r}")
if first.result is not keys[16] or second.result is not keys[32]:
    h.fail(f"a thread read another's best_config right after its call: first {first.result}, second {second.result}")
h.passed("cache holds both keys, best_config is the last call's, each thread read its own")
