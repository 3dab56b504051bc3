"""Model of PyTorch Inductor's CachingAutotuner, torch 2.15.0
(torch/_inductor/runtime/triton_heuristics.py in the torch-2.15.0 wheel).

Kept as upstream where the race lives: run() precompiles under self.lock, then
calls autotune_to_one_config() without any lock when there is more than one
launcher; autotune_to_one_config() benchmarks every launcher of the list it finds
(benchmark_all_configs -> bench -> benchmarker.benchmark_gpu, which synchronizes
with the GIL released), then rebinds the shared self.launchers to its winner and
prunes the shared self.compile_results to the winner's result, and raises
AssertionError when the winner is not among them; run() then unpacks
`(launcher,) = self.launchers`.  The per-call state on the shared object:
self.launchers, self.compile_results, self.autotune_time_taken_ns,
self.benchmark_failure_reasons, self._cached_launcher.

Left out: plugins, static (cubin) launchers and their close(), coordinate
descent and combo-kernel tuning, the autotune cache, argument cloning, logging;
the grid is passed to run() as a keyword (upstream computes it in the launcher).
The class and module names are upstream's, so tunerguard's built-in target
(torch._inductor.runtime.triton_heuristics:CachingAutotuner.run) guards it and its
tuning methods (benchmark_all_configs, autotune_to_one_config, bench, precompile)
are marked as on the real one.
"""
import builtins
import threading
import time

from triton.runtime.jit import KernelInterface

from .benchmarking import benchmarker


class CompileResult:
    """One config compiled: makes the launcher that runs the kernel with it."""

    def __init__(self, fn, config):
        self.fn = fn
        self.config = config

    def make_launcher(self):
        fn, config = self.fn, self.config

        def launcher(*args, grid, stream):
            return fn.run(*args, grid=grid, warmup=False, **config.all_kwargs())

        launcher.config = config
        return launcher


class CachingAutotuner(KernelInterface):

    def __init__(self, fn, configs):
        assert len(configs) > 0, "Non-empty TritonConfig list required for compiling"
        self.fn = fn
        self.configs = configs
        self.compile_results = []
        self.launchers = []
        self.lock = threading.Lock()
        self.precompile_time_taken_ns = 0
        self.autotune_time_taken_ns = 0
        self.benchmark_failure_reasons = {}
        self._cached_launcher = None

    def precompile(self):
        with self.lock:
            if self.launchers:  # upstream: _precompile_worker returns when compile_results exist
                return
            self.compile_results = [CompileResult(self.fn, c) for c in self.configs]
            self.launchers = [r.make_launcher() for r in self.compile_results]

    def bench(self, launcher, *args, grid, **kwargs):
        def kernel_call():
            launcher(*args, grid=grid, stream=0, **kwargs)

        return benchmarker.benchmark_gpu(kernel_call, rep=40)

    def benchmark_all_configs(self, *args, **kwargs):
        timings = {}
        for launcher in self.launchers:  # the list as it is now; another thread may rebind it
            timings[launcher] = self.bench(launcher, *args, **kwargs)
        return timings

    def _prune_compile_results_to_launcher(self, launcher):
        if not self.compile_results:
            return
        for result in self.compile_results:
            if result.config is launcher.config:
                self.compile_results = [result]
                return
        raise AssertionError(
            f"Autotuned launcher config does not match any compile result: {launcher.config}"
        )

    def autotune_to_one_config(self, *args, **kwargs):
        start_time = time.time_ns()
        timings = self.benchmark_all_configs(*args, **kwargs)
        benchmark_time_taken_ns = time.time_ns() - start_time
        best_launcher = builtins.min(timings, key=timings.get)
        self.launchers = [best_launcher]
        self._prune_compile_results_to_launcher(best_launcher)
        self.autotune_time_taken_ns = self.precompile_time_taken_ns + benchmark_time_taken_ns

    def run(self, *args, grid, stream, benchmark_run=False, **kwargs):
        fast = self._cached_launcher
        if fast is not None and not benchmark_run and not kwargs:
            return fast(*args, grid=grid, stream=stream)
        if len(self.launchers) != 1:
            if len(self.launchers) == 0:
                start_time = time.time_ns()
                self.precompile()
                self.precompile_time_taken_ns = time.time_ns() - start_time
            if len(self.launchers) > 1:
                self.autotune_to_one_config(*args, grid=grid, **kwargs)
        (launcher,) = self.launchers
        result = launcher(*args, grid=grid, stream=stream, **kwargs)
        if self._cached_launcher is None and not benchmark_run and len(self.launchers) == 1:
            self._cached_launcher = launcher
        return result
