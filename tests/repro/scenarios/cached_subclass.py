#!/usr/bin/env python3
"""flash-linear-attention's CachedAutotuner (fla/ops/utils/cache.py): a subclass of
Triton's Autotuner, defined after `import triton`, whose run() computes the key,
maybe pre-seeds self.cache from a JSON config file, then calls super().run().
Called like FLA's l2norm_fwd: keyword arguments only, so self.nargs is {} and the
race cannot alias tensors; it can only null nargs (exllamav3#308, triton#11494).

Forced overlap: worker-0 tunes D=8 and parks in its first benchmark synchronize.
Workers 1-3 call the same kernel with the same key; the cache is still cold, so
they tune too and each W2 sets self.nargs = None. worker-0 resumes and its next
_bench raises TypeError: 'NoneType' object is not a mapping.

Correct result: every y is x / ||x||, and the subclass's run() ran on every call.
"""
import json
import math
import os
import threading

import _harness

h = _harness.Harness("cached_subclass", __doc__)

import triton  # noqa: E402  (the model or a release: _which_triton)
import triton.language as tl  # noqa: E402
from triton.runtime.autotuner import Autotuner  # noqa: E402
from repro_tensor import Tensor  # noqa: E402


class CachedAutotuner(Autotuner):
    """Shape of fla.ops.utils.cache.CachedAutotuner (FLA v0.5.2): tuning is Triton's."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs):
        super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs)
        self.kernel_name = fn.fn.__name__ if hasattr(fn, "fn") else fn.__name__
        self.cache_mode = os.environ.get("FLA_CACHE_MODE", "disabled")
        self.config_dir = os.environ.get("FLA_CONFIG_DIR")
        self.runs = 0
        self._runs_lock = threading.Lock()

    def build_key(self, args, kwargs):
        named = {**dict(zip(self.arg_names, args)), **kwargs}
        key = [named[k] for k in self.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)

    def should_check_fla_cache(self, key):
        return self.cache_mode == "always" or (self.cache_mode != "disabled" and key not in self.cache)

    def maybe_load_cached_config(self, key):
        if not self.config_dir:
            return
        path = os.path.join(self.config_dir, f"{self.kernel_name}.json")
        if os.path.exists(path):
            with open(path) as f:
                best = json.load(f)
            self.cache[key] = triton.Config(best["kwargs"], num_warps=best.get("num_warps", 4))

    def run(self, *args, **kwargs):
        with self._runs_lock:
            self.runs += 1
        key = self.build_key(args, kwargs)
        if self.should_check_fla_cache(key):
            self.maybe_load_cached_config(key)
        return super().run(*args, **kwargs)


def cache_autotune(configs, key, reset_to_zero=None, restore_value=None, **kwargs):
    """Shape of fla's fla_cache_autotune decorator."""

    def decorator(fn):
        return CachedAutotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, **kwargs)

    return decorator


@cache_autotune(
    configs=[triton.Config({"BD": bd}, num_warps=w) for bd in (8, 16, 32) for w in (1, 2, 4)],
    key=["D"],
)
@triton.jit
def l2norm_fwd_kernel(x, y, eps, D, BD: tl.constexpr):
    norm = math.sqrt(sum(v * v for v in x.data[:D]) + eps)
    for i in range(D):
        y.data[i] = x.data[i] / norm


N_THREADS = 4
D = 8
EPS = 1e-6


def make_body(i):
    x = Tensor([float(i + 1 + j) for j in range(D)], name=f"x{i}")
    y = Tensor.zeros(D, name=f"y{i}")

    def body():
        h.call(lambda: l2norm_fwd_kernel[(1,)](x=x, y=y, eps=EPS, D=D))  # keywords only, as l2norm_fwd
        return x, y

    return body


workers = [h.worker(f"worker-{i}", make_body(i)) for i in range(N_THREADS)]
h.overlap(workers)
for w in workers:
    x, y = w.result
    norm = math.sqrt(sum(v * v for v in x.data) + EPS)
    want = [v / norm for v in x.data]
    if any(abs(a - b) > 1e-12 for a, b in zip(y.data, want)):
        h.fail(f"{w.name}: y = {y.data}, expected {want}")
if l2norm_fwd_kernel.runs != N_THREADS:
    h.fail(f"CachedAutotuner.run ran {l2norm_fwd_kernel.runs} times, expected {N_THREADS}")
h.passed(f"{N_THREADS} threads through CachedAutotuner.run -> Autotuner.run")
