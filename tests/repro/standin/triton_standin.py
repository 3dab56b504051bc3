"""What a CPU needs to drive a real Triton release's Autotuner (TG_TRITON_RELEASE=1).

triton.runtime.autotuner, triton.autotune and triton.Config stay the release's
own.  install() puts three stand-ins around them, for what has no CPU path:
  * the kernel: `triton.jit` makes a StandinKernel, a subclass of the release's
    JITFunction with the surface the Autotuner reads (arg_names, fn, run,
    warmup, cache_key, __name__; __getitem__ is the release's).  A launch goes
    through the stand-in libcuda (cuModuleLoadData once, then cuLaunchKernel,
    GIL released by ctypes) and then runs the Python body on the tensors;
  * the driver: `triton.runtime.driver.driver.set_active(StandinDriver())`, so
    `driver.active` (read by check_disk_cache's target and the scenarios) is the
    stand-in libcuda;
  * the timer: `triton.autotune` passes `do_bench=do_bench` (the argument every
    release from 3.2 has) unless the caller gives one.  do_bench has the shape
    of triton.testing.do_bench: a call and a synchronize, five calls and a
    synchronize, warm-up and timed calls, a final synchronize; each synchronize
    is cuCtxSynchronize with the GIL released, where the scenarios' gate parks.
"""
import ctypes
import functools
import inspect
import statistics
import threading
import time

_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "ir_override")


class StandinDriver:
    """driver.active: libcuda.so.1 (the stand-in, on LD_LIBRARY_PATH), loaded on first use."""

    def __init__(self):
        self._lib = None
        self._lock = threading.Lock()

    @property
    def lib(self):
        with self._lock:
            if self._lib is None:
                lib = ctypes.CDLL("libcuda.so.1")  # CDLL: the GIL is released around each call
                lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
                lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                                    ctypes.c_char_p]
                lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
                    ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
                self._check("cuInit", lib.cuInit(0))
                self._lib = lib
        return self._lib

    @staticmethod
    def _check(name, rc):
        if rc != 0:
            raise RuntimeError(f"Triton Error [CUDA]: {name} returned {rc}")

    def load_binary(self, name):
        mod, fun = ctypes.c_void_p(), ctypes.c_void_p()
        self._check("cuModuleLoadData", self.lib.cuModuleLoadData(ctypes.byref(mod), b"\x7fELF standin cubin"))
        self._check("cuModuleGetFunction", self.lib.cuModuleGetFunction(ctypes.byref(fun), mod, name.encode()))
        return fun

    def launch(self, function, grid, num_warps):
        gx, gy, gz = (tuple(grid) + (1, 1, 1))[:3]
        self._check("cuLaunchKernel",
                    self.lib.cuLaunchKernel(function, gx, gy, gz, 32 * num_warps, 1, 1, 0, None, None, None))

    def synchronize(self):
        self._check("cuCtxSynchronize", self.lib.cuCtxSynchronize())

    def get_benchmarker(self):
        return do_bench

    def get_device_interface(self):
        return self

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda", 90, 32)  # check_disk_cache hashes the release's own CUDA backend for it


DRIVER = StandinDriver()


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """triton.testing.do_bench's shape, with perf_counter for events and at most 2 warm-up, 3 timed calls."""
    fn()
    DRIVER.synchronize()
    start = time.perf_counter()
    for _ in range(5):
        fn()
    DRIVER.synchronize()
    estimate_ms = max((time.perf_counter() - start) * 1e3 / 5, 1e-6)
    for _ in range(max(1, min(2, int(warmup / estimate_ms)))):
        fn()
    times = []
    for _ in range(max(1, min(3, int(rep / estimate_ms)))):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    DRIVER.synchronize()
    if quantiles is not None:
        times = sorted(times)
        ret = [times[min(len(times) - 1, int(q * (len(times) - 1) + 0.5))] for q in quantiles]
        return ret[0] if len(ret) == 1 else ret
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median,
            "all": list}[return_mode](times)


def _standin_kernel_class(JITFunction):

    class StandinKernel(JITFunction):
        """A kernel whose "GPU" work is its Python body, run after a launch on the stand-in libcuda."""

        def __init__(self, fn):  # the release's __init__ parses the source for the compiler: not called
            self.fn = fn
            self.module = fn.__module__
            self.signature = inspect.signature(fn)
            self.arg_names = list(self.signature.parameters)
            self.constexprs = [n for n, p in self.signature.parameters.items() if "constexpr" in str(p.annotation)]
            self.functions = {}  # specialization -> CUfunction
            self._functions_lock = threading.Lock()
            self.__name__ = fn.__name__
            self.__qualname__ = fn.__qualname__
            self.__doc__ = fn.__doc__
            self.__globals__ = fn.__globals__

        @property
        def cache_key(self):
            import hashlib
            return hashlib.sha256(self.fn.__qualname__.encode() + self.fn.__code__.co_code).hexdigest()

        def run(self, *args, grid, warmup, **kwargs):
            options = {k: kwargs.pop(k) for k in _LAUNCH_OPTIONS if k in kwargs}
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            spec = tuple((n, v) for n, v in bound.arguments.items() if n in self.constexprs)
            spec += tuple(sorted((k, str(v)) for k, v in options.items()))
            with self._functions_lock:
                function = self.functions.get(spec)
            if function is None:
                function = DRIVER.load_binary(self.__name__)
                with self._functions_lock:
                    self.functions.setdefault(spec, function)
            if warmup:
                return function
            if callable(grid):
                grid = grid(dict(bound.arguments))
            DRIVER.launch(function, grid, options.get("num_warps") or 4)
            self.fn(**bound.arguments)
            return function

        def warmup(self, *args, grid, **kwargs):
            return self.run(*args, grid=grid, warmup=True, **kwargs)

        def __call__(self, *args, **kwargs):
            raise RuntimeError("Cannot call @triton.jit'd outside of the scope of a kernel")

        def __repr__(self):
            return f"StandinKernel({self.module}:{self.fn.__qualname__})"

    return StandinKernel


def install():
    """Import the release's triton and put the stand-ins in; returns the triton module."""
    import os
    import triton
    if os.path.basename(os.path.dirname(os.path.dirname(triton.__file__))) == "model":
        raise ImportError(f"TG_TRITON_RELEASE=1 but `import triton` found the model ({triton.__file__})")
    from triton.runtime.driver import driver
    from triton.runtime.jit import JITFunction

    kernel = _standin_kernel_class(JITFunction)

    def jit(fn=None, **_options):
        return kernel(fn) if fn is not None else kernel

    release_autotune = triton.autotune

    @functools.wraps(release_autotune)
    def autotune(*args, do_bench=do_bench, **kwargs):
        return release_autotune(*args, do_bench=do_bench, **kwargs)

    driver.set_active(DRIVER)
    triton.jit = jit
    triton.autotune = autotune
    return triton
