"""Model of triton.testing.do_bench (Triton 3.6), the default benchmarker on CUDA
(CudaDriver.get_benchmarker). Same shape: one call + synchronize, an estimate
over 5 calls + synchronize, warm-up calls, timed calls, a final synchronize,
quantiles. Event timing is replaced by time.perf_counter(), and the warm-up and
repeat counts are capped (N_WARMUP_MAX, N_REPEAT_MAX) so a model benchmark
takes microseconds instead of 125 ms. Every synchronize goes through
cuCtxSynchronize with the GIL released (anatomy note §1.8, G5).
"""
import statistics
import time

from .runtime.driver import driver

N_WARMUP_MAX = 2
N_REPEAT_MAX = 3


def _quantile(values, q):
    values = sorted(values)
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    assert return_mode in ["min", "max", "mean", "median", "all"]
    di = driver.active.get_device_interface()

    fn()
    di.synchronize()

    cache = driver.active.get_empty_cache_for_benchmark()

    # Estimate the runtime of the function
    start = time.perf_counter()
    for _ in range(5):
        driver.active.clear_cache(cache)
        fn()
    di.synchronize()
    estimate_ms = (time.perf_counter() - start) * 1e3 / 5

    # compute number of warmup and repeat
    n_warmup = max(1, min(N_WARMUP_MAX, int(warmup / max(estimate_ms, 1e-6))))
    n_repeat = max(1, min(N_REPEAT_MAX, int(rep / max(estimate_ms, 1e-6))))
    # Warm-up
    for _ in range(n_warmup):
        fn()
    # Benchmark
    times = []
    for i in range(n_repeat):
        driver.active.clear_cache(cache)
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    # Record clocks
    di.synchronize()
    if quantiles is not None:
        ret = [_quantile(times, q) for q in quantiles]
        if len(ret) == 1:
            ret = ret[0]
        return ret
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)
