#!/usr/bin/env python3
"""The autotuner races with real Triton and PyTorch on a GPU.

  python tests/gpu/triton_races.py SCENARIO [--device N] [--device2 M]

Scenarios:
  seeds004         the seeds/004 script as users run it: 8 threads, one stream
                   each, one autotuned kernel with key=[] and 24 configs.  The
                   overlap comes from the cold cache (compiles), not forced.
  hammer           a thread hammers an already tuned key while another tunes a
                   new key: the tuning thread's _bench reads self.nargs = None.
  cached_subclass  the same through a CachedAutotuner-style subclass whose run()
                   calls super().run() (flash-linear-attention's shape).
  keys_loop        one thread per device (--device, --device2), one autotuned
                   kernel called with six keys, three rounds, cold cache: both
                   threads tune and benchmark at once.  Wrong numbers or an
                   exception when the race shows.
  keys_loop_warm   the same with every config compiled first (another key), so
                   the overlap is in the benchmarking (do_bench's synchronize).
  fast_path_first  the fast-path call is inside first; a thread tuning a new
                   key comes in, and the fast call's return clears self.nargs
                   under it (TypeError).  detect sees it at that return.
  reset_to_zero    positional tensors, an atomic counter kernel with
                   reset_to_zero: the tuning thread resets the other thread's
                   tensor and its own accumulates.  No exception: wrong numbers.

Forced overlap (all but seeds004): the tuning thread A blocks inside its own
early_config_prune hook (inside Autotuner.run, self.nargs set, GIL released by
Event.wait).  Thread B then makes its call; the main thread waits until B is
either done, parked in its own hook, or blocked by tunerguard's serialize mode
(seen through the "tunerguard.serialize_wait" audit event), and only then lets
A go on.  No sleeps.  Safety timeouts make the script fail, never pass.

Exit status: 0 correct results and no exception; 1 the race showed (one line
on stderr says how); 2 set-up problem (no GPU, no Triton).
"""
import argparse
import sys
import threading
import traceback

TIMEOUT = 120.0

try:
    import torch
    import triton
    import triton.language as tl
    from triton.runtime.autotuner import Autotuner
except Exception as e:  # pragma: no cover
    print(f"triton_races: cannot import torch/triton: {e}", file=sys.stderr)
    sys.exit(2)
if not torch.cuda.is_available():
    print("triton_races: no CUDA device", file=sys.stderr)
    sys.exit(2)

serialize_waits = threading.Event()


def _audit(event, args):
    if event == "tunerguard.serialize_wait":
        serialize_waits.set()


sys.addaudithook(_audit)


class Gate:
    """A blocks in its prune hook until released; B may park in a config hook."""

    def __init__(self):
        self.armed = False
        self.victim = None            # thread that must block in prune
        self.a_inside = threading.Event()
        self.release_a = threading.Event()
        self.b_parked = threading.Event()
        self.release_b = threading.Event()

    def prune(self, configs, named_args, **kwargs):
        if self.armed and threading.current_thread() is self.victim:
            self.a_inside.set()
            if not self.release_a.wait(TIMEOUT):
                raise RuntimeError("gate: A was never released")
        return configs


def wait_for_b(b_done, gate):
    """B is done, parked in its own hook, or blocked by tunerguard."""
    for _ in range(int(TIMEOUT * 10)):
        if b_done.is_set() or gate.b_parked.is_set() or serialize_waits.is_set():
            return
        b_done.wait(0.1)  # a bounded wait on B's own progress, not an ordering sleep
    raise RuntimeError("B made no progress")


def run_threads(fa, fb, gate):
    errors = {}
    b_done = threading.Event()

    def wrap(name, f, done=None):
        def body():
            try:
                f()
            except BaseException as e:
                errors[name] = e
                traceback.print_exc()
            finally:
                if done is not None:
                    done.set()
        return body

    ta = threading.Thread(target=wrap("A", fa), name="tuner-A")
    tb = threading.Thread(target=wrap("B", fb, b_done), name="hammer-B")
    gate.victim = ta
    gate.armed = True
    ta.start()
    if not gate.a_inside.wait(TIMEOUT):
        raise RuntimeError("A never entered the tuner")
    tb.start()
    wait_for_b(b_done, gate)
    gate.release_a.set()
    ta.join(TIMEOUT)
    gate.release_b.set()
    tb.join(TIMEOUT)
    return errors


# ---- kernels -------------------------------------------------------------------------

def make_add_one(gate, autotuner_cls=None):
    configs = [triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512, 1024) for w in (2, 4)]

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)

    if autotuner_cls is None:
        return triton.autotune(configs=configs, key=["n"], prune_configs_by={"early_config_prune": gate.prune},
                               restore_value=["x_ptr"])(add_one)
    return autotuner_cls(add_one, add_one.arg_names, configs, ["n"], reset_to_zero=None, restore_value=["x_ptr"],
                         prune_configs_by={"early_config_prune": gate.prune})


class CachedAutotuner(Autotuner):
    """flash-linear-attention's shape: some work, then super().run()."""

    def run(self, *args, **kwargs):
        self.last_call_key = tuple(a.shape if hasattr(a, "shape") else a for a in args)
        return super().run(*args, **kwargs)


def scenario_hammer(dev, dev2, subclass=False):
    gate = Gate()
    kern = make_add_one(gate, CachedAutotuner if subclass else None)
    grid = lambda meta: (triton.cdiv(meta["n"] if "n" in meta else 0, meta["BLOCK"]),)  # noqa: E731
    xb = torch.zeros(1024, device=f"cuda:{dev2}")
    with torch.cuda.device(dev2):
        kern[lambda m: (triton.cdiv(1024, m["BLOCK"]),)](xb, 1024)  # B's key is tuned
    torch.cuda.synchronize(dev2)
    xa = torch.zeros(4096, device=f"cuda:{dev}")

    def fa():
        with torch.cuda.device(dev):
            kern[lambda m: (triton.cdiv(4096, m["BLOCK"]),)](xa, 4096)
            torch.cuda.synchronize(dev)

    def fb():
        with torch.cuda.device(dev2):
            kern[lambda m: (triton.cdiv(1024, m["BLOCK"]),)](xb, 1024)
            torch.cuda.synchronize(dev2)

    del grid
    errors = run_threads(fa, fb, gate)
    if errors:
        e = next(iter(errors.values()))
        return f"thread raised {type(e).__name__}: {e}"
    if not (torch.all(xa == 1).item() and torch.all(xb == 2).item()):
        return "wrong numbers"
    return None


def scenario_reset_to_zero(dev, dev2):
    gate = Gate()

    def b_hook(nargs):
        # B's config hook: park B with self.nargs = B's arguments, once.
        if gate.armed and threading.current_thread() is not gate.victim and not gate.b_parked.is_set():
            gate.b_parked.set()
            if not gate.release_b.wait(TIMEOUT):
                raise RuntimeError("gate: B was never released")

    configs = [triton.Config({"BLOCK": b}, num_warps=4, pre_hook=b_hook) for b in (64, 128, 256, 512)]

    @triton.autotune(configs=configs, key=["n"], reset_to_zero=["out_ptr"],
                     prune_configs_by={"early_config_prune": gate.prune})
    @triton.jit
    def count(out_ptr, n, BLOCK: tl.constexpr):
        tl.atomic_add(out_ptr, 1)

    grid_of = lambda n: (lambda m: (triton.cdiv(n, m["BLOCK"]),))  # noqa: E731
    out_b = torch.zeros(1, dtype=torch.int32, device=f"cuda:{dev2}")
    with torch.cuda.device(dev2):
        count[grid_of(1 << 12)](out_b, 1 << 12)  # tunes B's key
    torch.cuda.synchronize(dev2)
    out_b.zero_()
    out_a = torch.zeros(1, dtype=torch.int32, device=f"cuda:{dev}")
    best_b = count.cache[next(iter(count.cache))].kwargs["BLOCK"]

    def fa():
        with torch.cuda.device(dev):
            count[grid_of(1 << 14)](out_a, 1 << 14)
            torch.cuda.synchronize(dev)

    def fb():
        with torch.cuda.device(dev2):
            count[grid_of(1 << 12)](out_b, 1 << 12)
            torch.cuda.synchronize(dev2)

    errors = run_threads(fa, fb, gate)
    if errors:
        e = next(iter(errors.values()))
        return f"thread raised {type(e).__name__}: {e}"
    best_a = count.cache[(1 << 14, "torch.int32")].kwargs["BLOCK"] if (1 << 14, "torch.int32") in count.cache else None
    want_a = None
    for k, cfg in count.cache.items():
        if k[0] == 1 << 14:
            want_a = triton.cdiv(1 << 14, cfg.kwargs["BLOCK"])
    want_b = triton.cdiv(1 << 12, best_b)
    del best_a
    got_a, got_b = out_a.item(), out_b.item()
    if got_a != want_a or got_b != want_b:
        return f"wrong numbers: A counted {got_a} (want {want_a}), B counted {got_b} (want {want_b})"
    return None


def _run_all(threads, errors):
    """Start the threads, join them; one line about the first exception, or None."""
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    if errors:
        e = next(iter(errors.values()))
        return f"{len(errors)} thread(s) raised {type(e).__name__}: {e}"
    return None


def scenario_seeds004(dev, dev2):
    @triton.autotune(configs=[triton.Config({"N": n}) for n in range(24)], key=[])
    @triton.jit
    def test(N: tl.constexpr = 0):
        pass

    errors = {}

    def run(i):
        try:
            d = dev if i % 2 == 0 else dev2
            with torch.cuda.device(d):
                with torch.cuda.stream(torch.cuda.Stream()):
                    test[(1,)]()
                torch.cuda.synchronize(d)
        except BaseException as e:
            errors[i] = e
            traceback.print_exc()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    return _run_all(threads, errors)


def scenario_small(dev, dev2):
    """Two threads, two configs, no forcing: the race is rare without help;
    stress=1 makes it show in every run."""
    @triton.autotune(configs=[triton.Config({"N": n}) for n in range(2)], key=[])
    @triton.jit
    def small(N: tl.constexpr = 0):
        pass

    return _threads_call(lambda: small[(1,)](), 2, dev, dev2)


def scenario_bench_small(dev, dev2):
    """Two threads tune a new key of a kernel whose configs are already
    compiled (warmed on another key), so the tuning is pure benchmarking: the
    overlap happens while a thread is inside do_bench's synchronize.  With
    stress=1 the report names that synchronize."""
    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (128, 256)], key=["n"])
    @triton.jit
    def bench_small(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    # Thread i runs on (dev, dev2)[i % 2] (_threads_call): its tensor lives there.
    devs = (dev, dev2)
    xs = [torch.zeros(1 << 16, device=f"cuda:{d}") for d in devs]
    for d in sorted(set(devs)):  # compile both configs on every device used
        with torch.cuda.device(d):
            bench_small[lambda m: (triton.cdiv(1024, m["BLOCK"]),)](torch.zeros(1024, device=f"cuda:{d}"), 1024)
        torch.cuda.synchronize(d)
    grid = lambda m: (triton.cdiv(1 << 16, m["BLOCK"]),)  # noqa: E731

    def call():
        x = xs[devs.index(torch.cuda.current_device())]
        x.zero_()  # work of its own first, on its stream: the report then names its device and stream
        bench_small[grid](x, 1 << 16)

    return _threads_call(call, 2, dev, dev2)


def scenario_bench_spin(dev, dev2):
    """bench_small with a kernel that spins (SPIN dependent steps per element,
    milliseconds a launch), so a benchmarking thread spends most of its time
    blocked in do_bench's synchronize and the other thread's entry finds it
    there; each device warms its own key, so both configs compile on both.
    On two H200s, 2 of 4 detect runs with stress=1 found the thread inside
    blocked in cuCtxSynchronize_v2, and the report named that synchronize."""
    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (128, 256)], key=["n"])
    @triton.jit
    def bench_spin(x_ptr, n, spin, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n)
        for _ in range(spin):
            v = v * 0.5 + 0.5  # only the time it takes matters
        tl.store(x_ptr + offs, v + 1, mask=offs < n)

    spin = 200_000
    devs = (dev, dev2)
    xs = [torch.zeros(1 << 16, device=f"cuda:{d}") for d in devs]
    for j, d in enumerate(sorted(set(devs))):
        n = 1024 >> j
        with torch.cuda.device(d):
            bench_spin[lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)](torch.zeros(n, device=f"cuda:{d}"), n, spin)
        torch.cuda.synchronize(d)
    grid = lambda m: (triton.cdiv(1 << 16, m["BLOCK"]),)  # noqa: E731

    def call():
        x = xs[devs.index(torch.cuda.current_device())]
        x.zero_()
        bench_spin[grid](x, 1 << 16, spin)

    return _threads_call(call, 2, dev, dev2)


def scenario_race_free(dev, dev2):
    """All threads tune one after the other, then launch concurrently: no race,
    so stress=1 must report nothing."""
    @triton.autotune(configs=[triton.Config({"N": n}) for n in range(4)], key=[])
    @triton.jit
    def free(N: tl.constexpr = 0):
        pass

    free[(1,)]()
    torch.cuda.synchronize()
    return _threads_call(lambda: free[(1,)](), 4, dev, dev2)


def scenario_keys_loop(dev, dev2, warm=False):
    """The seeds' configuration: one thread per device (thread 0 on dev, thread
    1 on dev2), each on its own stream, calling one autotuned kernel with six
    keys (sizes), ROUNDS times over, cold cache, starting together.  Both
    threads tune at once; after the first key the configs are compiled, so the
    tuning is pure benchmarking (do_bench's synchronize).  restore_value keeps
    the benchmarks from changing the tensors: every tensor must end equal to
    the number of calls made on it.

    warm (scenario keys_loop_warm): the main thread first tunes another key on
    each device, so every config is compiled there, and each loop thread zeroes
    its tensors on its own stream before the loop (its last CUDA call is then
    on its device and stream).  The first overlap is then in the benchmarking,
    where the thread inside sits in do_bench's synchronize."""
    configs = [triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512, 1024) for w in (2, 4)]

    @triton.autotune(configs=configs, key=["n"], restore_value=["x_ptr"])
    @triton.jit
    def keys_add_one(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)

    rounds = 3
    sizes = [1 << k for k in range(12, 18)]
    devs = (dev, dev2)
    xs = {(i, n): torch.zeros(n, device=f"cuda:{devs[i]}") for i in range(2) for n in sizes}
    if warm:
        for j, d in enumerate(sorted(set(devs))):  # a key of its own per device: each tunes, so compiles all
            n = (1 << 11) >> j
            with torch.cuda.device(d):
                keys_add_one[lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)](torch.zeros(n, device=f"cuda:{d}"), n)
    for d in set(devs):
        torch.cuda.synchronize(d)
    start = threading.Barrier(2)
    errors = {}

    def run(i):
        try:
            with torch.cuda.device(devs[i]), torch.cuda.stream(torch.cuda.Stream()):
                if warm:
                    for n in sizes:
                        xs[(i, n)].zero_()
                    torch.cuda.current_stream().synchronize()
                start.wait(TIMEOUT)
                for _ in range(rounds):
                    for n in (sizes if i == 0 else sizes[::-1]):
                        keys_add_one[lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)](xs[(i, n)], n)
                torch.cuda.synchronize(devs[i])
        except BaseException as e:
            errors[i] = e
            traceback.print_exc()

    threads = [threading.Thread(target=run, args=(i,), name=f"dev{devs[i]}-loop") for i in range(2)]
    why = _run_all(threads, errors)
    if why:
        return why
    wrong = [(i, n, float(x.min().item()), float(x.max().item())) for (i, n), x in xs.items()
             if not torch.all(x == rounds).item()]
    if wrong:
        i, n, lo, hi = wrong[0]
        return (f"wrong numbers in {len(wrong)} of {len(xs)} tensors: thread {i} n={n} holds {lo:g}..{hi:g}, "
                f"want {rounds}")
    return None


def scenario_fast_path_first(dev, dev2):
    """hammer the other way round (tests/repro/scenarios/fast_path_first.py on
    a GPU): thread 'fast' (on dev) calls a tuned key and parks in the config
    pre_hook of its fast path, between run()'s `self.nargs = ...` and its
    `self.nargs = None`; thread 'tuner' (on dev2) then tunes a new key of the
    same kernel.  Once the tuner is benchmarking (its autotune pre_hook runs
    before every benchmark launch), or is blocked by tunerguard's serialize
    mode, 'fast' is let go: its return clears self.nargs under the tuner,
    whose next _bench raises TypeError.  Under detect the race is seen when
    'fast' returns ("a call left a tuner while another thread was
    benchmarking in it")."""
    fast_inside, release_fast, tuner_benchmarking = threading.Event(), threading.Event(), threading.Event()

    def config_hook(nargs):  # run() calls it on the fast path too
        if threading.current_thread().name == "fast" and not fast_inside.is_set():
            fast_inside.set()
            if not release_fast.wait(TIMEOUT):
                raise RuntimeError("fast was never released")

    def bench_hook(nargs, reset_only=False):  # before every benchmark launch
        if threading.current_thread().name == "tuner":
            tuner_benchmarking.set()

    @triton.autotune(configs=[triton.Config({"BLOCK": b}, pre_hook=config_hook) for b in (128, 256, 512)],
                     key=["n"], pre_hook=bench_hook)
    @triton.jit
    def fast_first(x_ptr, n, spin, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n)
        for _ in range(spin):
            v = v * 0.5 + 0.5
        tl.store(x_ptr + offs, v + 1, mask=offs < n)

    n_warm, n_new = 4096, 1 << 16
    for d in sorted({dev, dev2}):  # the warm key tuned (and every config compiled) on each device
        with torch.cuda.device(d):
            fast_first[lambda m: (triton.cdiv(n_warm, m["BLOCK"]),)](torch.zeros(n_warm, device=f"cuda:{d}"),
                                                                      n_warm, 16)
        torch.cuda.synchronize(d)
    errors = {}

    def call(name, d, n, spin):
        try:
            with torch.cuda.device(d), torch.cuda.stream(torch.cuda.Stream()):
                fast_first[lambda m: (triton.cdiv(n, m["BLOCK"]),)](torch.zeros(n, device=f"cuda:{d}"), n, spin)
                torch.cuda.synchronize(d)
        except BaseException as e:
            errors[name] = e
            traceback.print_exc()

    fast = threading.Thread(target=call, args=("fast", dev, n_warm, 16), name="fast")
    tuner = threading.Thread(target=call, args=("tuner", dev2, n_new, 20_000), name="tuner")
    fast.start()
    if not fast_inside.wait(TIMEOUT):
        return "fast never reached its fast-path pre_hook"
    tuner.start()
    for _ in range(int(TIMEOUT * 10)):  # benchmarking, blocked by serialize, or already failed
        if tuner_benchmarking.is_set() or serialize_waits.is_set() or not tuner.is_alive():
            break
        tuner_benchmarking.wait(0.1)  # bounded wait on the tuner's own progress, not an ordering sleep
    release_fast.set()
    fast.join(TIMEOUT)
    tuner.join(TIMEOUT)
    if errors:
        e = next(iter(errors.values()))
        return f"{len(errors)} thread(s) raised {type(e).__name__}: {e}"
    return None


def _threads_call(call, n, dev, dev2):
    errors = {}

    def run(i):
        try:
            d = dev if i % 2 == 0 else dev2
            with torch.cuda.device(d):
                with torch.cuda.stream(torch.cuda.Stream()):
                    call()
                torch.cuda.synchronize(d)
        except BaseException as e:
            errors[i] = e
            traceback.print_exc()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    return _run_all(threads, errors)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=["seeds004", "hammer", "cached_subclass", "reset_to_zero", "small",
                                        "race_free", "bench_small", "bench_spin", "keys_loop", "keys_loop_warm",
                                        "fast_path_first"])
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--device2", type=int, default=None, help="device of the second thread (default: --device)")
    a = p.parse_args()
    dev2 = a.device if a.device2 is None else a.device2
    fn = {"seeds004": scenario_seeds004, "hammer": scenario_hammer,
          "cached_subclass": lambda d, d2: scenario_hammer(d, d2, subclass=True),
          "reset_to_zero": scenario_reset_to_zero, "small": scenario_small,
          "race_free": scenario_race_free, "bench_small": scenario_bench_small, "bench_spin": scenario_bench_spin,
          "keys_loop": scenario_keys_loop, "keys_loop_warm": lambda d, d2: scenario_keys_loop(d, d2, warm=True),
          "fast_path_first": scenario_fast_path_first}[a.scenario]
    why = fn(a.device, dev2)
    if why:
        print(f"triton_races {a.scenario}: FAIL: {why}", file=sys.stderr)
        sys.exit(1)
    print(f"triton_races {a.scenario}: PASS")


if __name__ == "__main__":
    main()
