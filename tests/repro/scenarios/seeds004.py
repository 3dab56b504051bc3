#!/usr/bin/env python3
"""seeds/004 (Triton PR #5893): 8 threads call one autotuned kernel with key=[],
so they all share the tuning key () on one Autotuner.

Forced overlap: worker-0 starts tuning and parks in the first synchronize of its
first config's do_bench, holding self.nargs = {}. Workers 1-7 then call the
kernel; the cache is still empty (R2), so they tune too, and each one that
finishes runs W2 (self.nargs = None). When worker-0 resumes, its next _bench
reads self.nargs (RB) and raises
    TypeError: 'NoneType' object is not a mapping
the crash seen in 5 of 5 cold runs of the seed script on an H200.

Correct result: every thread returns, and the kernel is tuned once for key ().
"""
import _harness

h = _harness.Harness("seeds004", __doc__)

import triton  # noqa: E402  (the model or a release: _which_triton)

N_THREADS = 8
N_CONFIGS = 8


@triton.autotune(
    configs=[triton.Config({"N": n}) for n in range(N_CONFIGS)],
    key=[],
)
@triton.jit
def test_seed004(N: triton.language.constexpr = 0):
    pass


def body():
    return h.call(lambda: test_seed004[(1,)]())


workers = [h.worker(f"worker-{i}", body) for i in range(N_THREADS)]
h.overlap(workers)
if list(test_seed004.cache) != [()]:
    h.fail(f"expected one tuned key (), cache holds {list(test_seed004.cache)}")
if test_seed004.nargs is not None:
    h.fail(f"Autotuner.nargs left set after all calls returned: {test_seed004.nargs!r}")
h.passed(f"{N_THREADS} threads, best config {test_seed004.cache[()]}")
