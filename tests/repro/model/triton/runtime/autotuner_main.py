"""Autotuner of Triton main, for the model (TG_TRITON_MODEL=main).

Run by runtime/autotuner.py in that module's namespace (Config, JITFunction,
knobs, driver, get_cache_manager ... are the names defined there); its class
replaces the 3.6 Autotuner.

It follows triton-lang/triton @ 009401737888df54cfa5427fab82b0f12d47a35b
(python/triton/runtime/autotuner.py, read in full; newer than 2026-05-29).
What main changed, against the 3.6 model, in what runs:
  * #10413 (2026-05-29): when pruning leaves ONE config, run() stores it in
    self.cache without benchmarking: no _bench, no do_bench, no synchronize, and
    used_cached_result stays True.  The call still runs W1 ... W2.
  * #10125 (2026-04-24): knobs.autotuning.listener, when set, is called after
    a tuning decision (benchmark or disk-cache hit) with the shared
    self.cache[key], self.configs_timings and self.bench_time: three more reads
    of per-call state on the shared instance, made from user code inside run().
  * #10295: the default hooks skip None tensors, and _post_hook restores what
    self.restore_copies holds instead of indexing it by name (no KeyError when
    another thread emptied it: it then silently restores nothing).
  * prune_configs keeps at least one config for a fractional top_k, counted
    on the configs left after early_config_prune.
  * check_disk_cache writes each part of the key as a str (non-JSON keys).
Unchanged: self.nargs is still on the shared instance, written first and
cleared last in run() and warmup() (no finally), and self.cache is still
check-then-act without a lock.  Tags W1/R1-R5/RB/W2/RC as in runtime/autotuner.py.
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
        self.cache_results = (cache_results or knobs.autotuning.cache) and not knobs.runtime.interpret
        # self.nargs is first set by run() or warmup(), as upstream.

        self.reset_to_zero = list(reset_to_zero) if reset_to_zero is not None else []
        self.restore_value = list(restore_value) if restore_value is not None else []

        self.pre_hook = lambda kwargs, reset_only=False: 0
        self.post_hook = lambda kwargs, exception: 0
        self.user_defined_pre_hook = bool(pre_hook)
        self.user_defined_post_hook = bool(post_hook)
        if pre_hook:
            self.pre_hook = pre_hook
        elif self.reset_to_zero or self.restore_value:

            def _pre_hook(kwargs, reset_only=False):
                for name in self.reset_to_zero:
                    if kwargs[name] is not None:  # None-safe since #10295
                        kwargs[name].zero_()
                if not reset_only:
                    self.restore_copies = {  # RC
                        name: kwargs[name].clone()
                        for name in self.restore_value if kwargs[name] is not None
                    }

            self.pre_hook = _pre_hook

        if post_hook:
            self.post_hook = post_hook
        elif self.restore_value:

            def _post_hook(kwargs, exception):
                for name, saved in self.restore_copies.items():  # RC: whatever the last _pre_hook left
                    kwargs[name].copy_(saved)
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
            # (model) do_bench_cudagraph is not modelled: both deprecated paths use the model's do_bench.
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
        full_nargs = {**self.nargs, **current}  # RB: unchanged on main

        def kernel_call():
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, **current)
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
                "key": [str(k) for k in tuning_key],  # main: a key of any type can be written
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
            if key not in self.cache:  # R2
                used_cached_result = False
                pruned_configs = self.prune_configs(kwargs)  # R3

                if len(pruned_configs) == 1:
                    # #10413: nothing to choose, so nothing is benchmarked (and the listener is not told).
                    self.cache[key] = pruned_configs[0]
                    used_cached_result = True
                else:

                    def benchmark():
                        bench_start = time.time()
                        timings = {config: self._bench(*args, config=config, **kwargs) for config in pruned_configs}
                        self.bench_time = time.time() - bench_start
                        self.cache[key] = builtins.min(timings, key=timings.get)
                        full_nargs = {**self.nargs, **kwargs, **self.cache[key].all_kwargs()}  # R4
                        self.pre_hook(full_nargs, reset_only=True)  # H1
                        self.configs_timings = timings

                    if self.cache_results:
                        used_cached_result = self.check_disk_cache(key, pruned_configs, benchmark)
                    else:
                        benchmark()

                    listener = knobs.autotuning.listener  # #10125: user code, still between W1 and W2
                    if listener is not None:
                        jit_fn = self.fn
                        while not isinstance(jit_fn, JITFunction):
                            jit_fn = jit_fn.fn
                        listener(
                            fn=jit_fn,
                            key=key,
                            best_config=self.cache[key],  # shared: the last writer's choice
                            configs_timings=self.configs_timings,  # shared: the last writer's timings
                            duration=None if used_cached_result else getattr(self, "bench_time", None),
                            cache_hit=used_cached_result,
                        )
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
        self.nargs = None  # W2: still the last statement before the return, still no finally
        return ret

    def prune_configs(self, kwargs: Dict) -> List[Config]:
        pruned_configs = self.configs
        if self.early_config_prune:
            pruned_configs = self.early_config_prune(self.configs, self.nargs, **kwargs)  # R3
            if not pruned_configs:
                raise AutotunerError(
                    "No valid autotuner configs after pruning. `early_config_prune` should return at least one config.")
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(pruned_configs) * top_k))  # main: never zero
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
