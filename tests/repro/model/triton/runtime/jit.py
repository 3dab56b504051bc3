"""Model of triton/runtime/jit.py (Triton 3.6): KernelInterface and a JITFunction
that "compiles" once per specialization and "launches" through the driver.

A kernel here is a plain Python function whose body computes the effect of one
whole launch (all programs of the grid) on the tensors it is given; it runs in
the launching thread right after cuLaunchKernel returns, which stands for the
GPU executing the work. Launch options (num_warps, num_stages, num_ctas,
maxnreg) arrive as keyword arguments from Config.all_kwargs(), as in Triton.
"""
from __future__ import annotations

import inspect
import threading
from typing import Generic, TypeVar

from .driver import driver

T = TypeVar("T")

_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


class KernelInterface(Generic[T]):
    run: T

    def warmup(self, *args, grid, **kwargs):
        return self.run(grid=grid, warmup=True, *args, **kwargs)

    def run(self, *args, grid, warmup, **kwargs):
        raise NotImplementedError("run not implemented")

    def __getitem__(self, grid) -> T:
        """
        A JIT function is launched with: fn[grid](*args, **kwargs).
        Hence JITFunction.__getitem__ returns a callable proxy that
        memorizes the grid.
        """
        return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)


class CompiledKernel:
    """One specialization: its CUfunction comes from cuModuleLoadData + cuModuleGetFunction."""

    def __init__(self, src, name, options):
        self.src = src
        self.name = name
        self.options = options
        self.module = None
        self.function = None

    def _init_handles(self):
        if self.module is not None:
            return
        # Real: driver.active.utils.load_binary(name, cubin, shared, device), GIL released (G2).
        self.module, self.function = driver.active.load_binary(self.name, b"\x7fELF tunerguard-model cubin")

    def run(self, grid, bound_args):
        self._init_handles()
        driver.active.launch(self.function, grid, self.options.get("num_warps", 4))  # G1: GIL released
        # The "GPU" executes the program on the tensors.
        self.src(**bound_args)


class JITFunction(KernelInterface[T]):

    def __init__(self, fn, version=None, do_not_specialize=None, debug=None, noinline=None, repr=None,
                 launch_metadata=None):
        self.fn = fn
        self.module = fn.__module__
        self.version = version
        self.signature = inspect.signature(fn)
        self.arg_names = [p.name for p in self.signature.parameters.values()]
        self.constexprs = [
            name for name, p in self.signature.parameters.items() if "constexpr" in str(p.annotation)
        ]
        self.device_caches = {}
        self._cache_lock = threading.Lock()
        # re-use docs of wrapped function
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__globals__ = fn.__globals__
        self.__module__ = fn.__module__

    @property
    def cache_key(self):
        """Upstream hashes the source and its dependencies (under _hash_lock since
        3.5, #7974); the model hashes the function's name and bytecode."""
        import hashlib
        code = self.fn.__code__
        return hashlib.sha256(self.fn.__qualname__.encode() + code.co_code).hexdigest()

    def _specialization_key(self, bound_args, options):
        key = []
        for name, value in bound_args.items():
            if name in self.constexprs:
                key.append((name, value))
            elif hasattr(value, "dtype"):
                key.append((name, str(value.dtype)))
        return tuple(key) + tuple(sorted(options.items()))

    def run(self, *args, grid, warmup, **kwargs):
        options = {k: kwargs.pop(k) for k in _LAUNCH_OPTIONS if k in kwargs}
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        bound_args = dict(bound.arguments)

        key = self._specialization_key(bound_args, options)
        kernel = self.device_caches.get(key)
        if kernel is None:
            with self._cache_lock:  # 3.5+ locks JITFunction.cache_key (#7974); compile is per key
                kernel = self.device_caches.get(key)
                if kernel is None:
                    kernel = CompiledKernel(self.fn, self.__name__, options)
                    self.device_caches[key] = kernel
        if not warmup:
            if callable(grid):
                grid = grid(bound_args)
            kernel.run(grid, bound_args)
        return kernel

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Cannot call @triton.jit'd outside of the scope of a kernel")

    def __repr__(self):
        return f"JITFunction({self.module}:{self.fn.__qualname__})"


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=None, debug=None,
        noinline=None):
    """Decorator for JIT-compiling a function using the Triton compiler (modelled)."""

    def decorator(fn):
        assert callable(fn)
        return JITFunction(fn, version=version, do_not_specialize=do_not_specialize, debug=debug,
                           noinline=noinline, repr=repr, launch_metadata=launch_metadata)

    if fn is not None:
        return decorator(fn)
    return decorator
