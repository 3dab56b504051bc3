"""Autotuner of Triton 3.4.x and 3.5.x, for the model (TG_TRITON_MODEL=3.4 or 3.5).

Run by runtime/autotuner.py in that module's namespace (so Config, JITFunction,
knobs, driver, get_cache_manager ... are the names defined there); its class
replaces the 3.6 Autotuner.

What it follows.  The stored index holds no copy of autotuner.py at the 3.4 or
3.5 release commits (docs/triton-versions.md says what was searched).  It is
written from triton-lang/triton @ 009401737888df54cfa5427fab82b0f12d47a35b
(main, read) with every change dated after the 3.5 branch cut (2025-08-29)
taken out again, and from older copies of the same file that were read:
triton-lang/triton-windows @ f4044820826e73a9de8f1a36a2794507fd08ece6 and
woct0rdho/triton-windows @ ccb6f52eb4f4275ab2938b381d6770139e9d4d46.
  * #6261 (2025-03, first in 3.4): check_disk_cache and cache_results are here.
  * #8059 (merged 2025-09-05, first in 3.6): prune_configs does NOT raise when
    early_config_prune returns nothing; benchmark() then fails in min() on an
    empty dict.  This is the one difference from the 3.6 model in what runs.
  * cache_results is `cache_results or (knobs.autotuning.cache and not
    knobs.runtime.interpret)`, the older spelling (the older copies).
  * 3.4 and 3.5 are one model: no change to this file's per-call state between
    the two cuts was found (3.5's #7974 locks JITFunction.cache_key, in jit.py).

The per-call state on the shared instance is the same as 3.6's and races the
same way: self.nargs (written first in run and warmup, cleared last, never in a
finally), self.cache (check then act, no lock), self.bench_time,
self.configs_timings, self.best_config, and self.restore_copies in the default
hooks.  The tags W1/R1-R5/RB/W2/RC are those of runtime/autotuner.py.
"""
from __future__ import annotations


class Autotuner(KernelInterface):

    def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook=None, post_hook=None,
                 prune_configs_by: Optional[Dict] = None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None,
                 cache_results=False):
        self.configs = configs if configs else [Config({}, num_warps=4, num_stages=3, num_ctas=1)]
        self.keys = key
        self.cache: Dict[Tuple, Config] = {}
        self.arg_names = arg_names
        self.cache_results = cache_results or (knobs.autotuning.cache and not knobs.runtime.interpret)
        # self.nargs is first set by run() or warmup(), as upstream.

        self.reset_to_zero = list(reset_to_zero) if reset_to_zero is not None else []
        self.restore_value = list(restore_value) if restore_value is not None else []

        # The hooks that reset or restore tensors around each benchmark launch.
        self.pre_hook = lambda kwargs, reset_only=False: 0
        self.post_hook = lambda kwargs, exception: 0
        self.user_defined_pre_hook = bool(pre_hook)
        self.user_defined_post_hook = bool(post_hook)
        if pre_hook:
            self.pre_hook = pre_hook
        elif self.reset_to_zero or self.restore_value:

            def _pre_hook(kwargs, reset_only=False):
                for name in self.reset_to_zero:
                    kwargs[name].zero_()  # the tensors of whichever call's snapshot `kwargs` is
                if not reset_only:
                    self.restore_copies = {name: kwargs[name].clone() for name in self.restore_value}  # RC

            self.pre_hook = _pre_hook

        if post_hook:
            self.post_hook = post_hook
        elif self.restore_value:

            def _post_hook(kwargs, exception):
                for name in self.restore_value:
                    kwargs[name].copy_(self.restore_copies[name])  # RC: KeyError once another thread emptied it
                self.restore_copies = {}

            self.post_hook = _post_hook

        self.perf_model = None
        self.configs_top_k = 1.0
        self.early_config_prune = None
        if prune_configs_by:
            self.perf_model = prune_configs_by.get("perf_model", None)
            self.configs_top_k = prune_configs_by.get("top_k", 1.0)
            self.early_config_prune = prune_configs_by.get("early_config_prune", None)

        self.fn = fn
        self.base_fn = fn
        while not inspect.isfunction(self.base_fn):
            self.base_fn = self.base_fn.fn

        self._do_bench = do_bench
        self.num_warmups = warmup
        self.num_reps = rep
        self.use_cuda_graph = use_cuda_graph
        if warmup is not None or rep is not None or use_cuda_graph:
            import warnings
            warnings.warn("warmup, rep, and use_cuda_graph parameters are deprecated. See "
                          "https://github.com/triton-lang/triton/pull/4496 for details.", DeprecationWarning,
                          stacklevel=1)
            # (model) both deprecated benchmarkers become the model's do_bench, as in the 3.6 model.
            from .. import testing
            self._do_bench = lambda kernel_call, quantiles: testing.do_bench(
                kernel_call, warmup=25 if warmup is None else warmup, rep=100 if rep is None else rep,
                quantiles=quantiles)

    @cached_property
    def do_bench(self):
        return driver.active.get_benchmarker() if self._do_bench is None else self._do_bench

    def _bench(self, *args, config, **meta):
        from ..compiler.errors import CompileTimeAssertionFailure

        verbose = knobs.autotuning.print
        if verbose:
            print(f"Autotuning kernel {self.base_fn.__name__} with config {config}")
        conflicts = meta.keys() & config.kwargs.keys()
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}."
                             " Make sure that you don't re-define auto-tuned symbols.")
        current = dict(meta, **config.all_kwargs())
        full_nargs = {**self.nargs, **current}  # RB: the TypeError once another call cleared nargs

        def kernel_call():
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, **current)  # the launch takes this call's own args
            except Exception as e:
                try:
                    self.post_hook(full_nargs, exception=e)
                finally:
                    raise
            self.post_hook(full_nargs, exception=None)

        try:
            return self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))
        except (OutOfResources, CompileTimeAssertionFailure, PTXASError) as e:
            if verbose:
                print(f"Autotuning failed with {e}")
            return [float("inf"), float("inf"), float("inf")]

    def check_disk_cache(self, tuning_key, configs, bench_fn):
        # The same steps as 3.6's (runtime/autotuner.py): nothing here changed between 3.4 and 3.6.
        if not tuning_key or any(cfg.pre_hook for cfg in configs):
            bench_fn()
            return False

        from triton.compiler.compiler import make_backend

        fn = self.fn
        while not isinstance(fn, JITFunction):
            fn = fn.fn
        parts = [
            triton_key(),
            make_backend(driver.active.get_current_target()).hash(),
            fn.cache_key,
            str(sorted(get_cache_invalidating_env_vars().items())),
            str(tuning_key),
        ] + [str(c) for c in configs]
        cache = get_cache_manager(hashlib.sha256("-".join(parts).encode("utf-8")).hexdigest())
        file_name = f"{fn.__name__[:150]}.autotune.json"
        path = cache.get_file(file_name)
        if path:
            with open(path, "r") as f:
                timings = {Config(**c): t for c, t in json.load(f)["configs_timings"]}
                self.cache[tuning_key] = builtins.min(timings, key=timings.get)
                self.configs_timings = timings
            return True

        bench_fn()
        cache.put(
            json.dumps({
                "key": tuning_key,
                "configs_timings": [(c.__dict__, t) for c, t in self.configs_timings.items() if not c.pre_hook],
            }), file_name, binary=False)
        return False

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))  # W1
        used_cached_result = True
        if len(self.configs) > 1:
            all_args = {**self.nargs, **kwargs}  # R1
            _args = {k: v for (k, v) in all_args.items() if k in self.arg_names}
            key = [_args[k] for k in self.keys if k in _args]
            key += [str(v.dtype) for v in _args.values() if hasattr(v, "dtype")]
            key = tuple(key)
            if key not in self.cache:  # R2: every thread with a cold key tunes it
                used_cached_result = False
                pruned_configs = self.prune_configs(kwargs)  # R3

                def benchmark():
                    bench_start = time.time()
                    timings = {config: self._bench(*args, config=config, **kwargs) for config in pruned_configs}
                    self.bench_time = time.time() - bench_start
                    self.cache[key] = builtins.min(timings, key=timings.get)  # ValueError if pruning left none
                    full_nargs = {**self.nargs, **kwargs, **self.cache[key].all_kwargs()}  # R4
                    self.pre_hook(full_nargs, reset_only=True)  # H1
                    self.configs_timings = timings

                if self.cache_results:
                    used_cached_result = self.check_disk_cache(key, pruned_configs, benchmark)
                else:
                    benchmark()
            config = self.cache[key]
        else:
            config = self.configs[0]
        self.best_config = config
        if knobs.autotuning.print and not used_cached_result:
            print(f"Triton autotuning for function {self.base_fn.__name__},\nwith key as {key},\n"
                  f"finished after {self.bench_time:.2f}s,\nbest config selected: {self.best_config};")
        if config.pre_hook is not None:
            full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}  # R5
            config.pre_hook(full_nargs)  # H2
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None  # W2: the last statement before the return; no finally
        return ret

    def prune_configs(self, kwargs: Dict) -> List[Config]:
        pruned_configs = self.configs
        if self.early_config_prune:
            # R3; before #8059 an empty answer is not checked here
            pruned_configs = self.early_config_prune(self.configs, self.nargs, **kwargs)
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(self.configs) * top_k)
            elif not isinstance(top_k, int):
                raise TypeError("Error while pruning configs, top_k must be either 1) a float <= 1.0 or 2) an int")
            if len(pruned_configs) > top_k:
                est_timing = {c: self.perf_model(**self.nargs, **kwargs, **c.all_kwargs()) for c in pruned_configs}
                pruned_configs = sorted(est_timing, key=est_timing.get)[:top_k]
        return pruned_configs

    def warmup(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))  # W1 (warmup)
        ret = [self.fn.warmup(*args, **kwargs, **c.all_kwargs()) for c in self.prune_configs(kwargs)]
        self.nargs = None  # W2 (warmup)
        return ret
