#!/usr/bin/env python3
"""One cell of the serialize benchmark (bench/serialize_bench.py runs it in a
fresh process per cell): N threads, each on its own stream, call two
autotuned kernels (8 configs each, keyed on n, a different n per thread).

  --phase steady   each thread tunes its keys one after another (a warm-up
                   in thread order), then all threads loop --steps times
                   over both kernels at once: calls per second.
  --phase cold     all threads arrive at once on cold keys (one key per
                   thread and kernel, plus one key shared by every thread),
                   run --steps calls each: wall time, and the same tuning
                   done one thread at a time in the same process before it
                   (the sequential warm-up) on other keys, for the ratio.
  --phase interleave
                   the steady state of several variants in this one process,
                   in phases that take turns (--interleave tg,none,lock): after
                   the warm-up, the same threads run --steps steps in each
                   phase, the phases of a round back to back in orders
                   balanced for what a phase leaves to the next (williams()),
                   --inner-rounds rounds.  tg: Autotuner.run as the
                   process has it (tunerguard's guard under the preload);
                   none: the same function unguarded (compiled again from
                   its module's source, with the module's globals); lock:
                   none inside the global lock; bare (under the preload only):
                   none with tunerguard's mode set to off for the phase (its
                   CUDA hooks pass straight through), to tell what the hooks
                   cost a process from what the guard costs a call; barelock
                   (under the preload only): lock with the mode off, the
                   user's lock as it runs without tunerguard.  bare and
                   barelock are what a user without tunerguard has, measured
                   in the process that has it.  tgoff (under the
                   preload only): tunerguard's guard with the mode off
                   (it calls the original at once), what the guard's
                   C method descriptor alone costs a call.  A
                   phase's neighbours ran within a second of it in the same
                   process, so the spread of fresh processes (docs/
                   benchmarks.md) stays out of the ratios.
  --lock           the five-line global lock of seeds/001 around
                   Autotuner.run (what users do instead).
  --other-us N     a mixed workload: after each step N us of other work
                   that lets the GIL go (a sleep), outside every tuner.

--backend gpu uses real torch + Triton on cuda:0; --backend cpu the model of
Triton in tests/repro/model with the stand-in libcuda (its launch is a ctypes
call, which releases the GIL as Triton's launcher does).  Prints one JSON
line.  Every result is checked (y == x + 1 after each step's pair of calls);
configs_benchmarked counts the do_bench calls of the tuners, so a key tuned
twice shows."""
import argparse
import ctypes
import json
import os
import random
import sys
import threading
import time
import types

ap = argparse.ArgumentParser()
ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--steps", type=int, default=2000)
ap.add_argument("--phase", choices=("steady", "cold", "interleave"), default="steady")
ap.add_argument("--interleave", default="tg,none,lock",
                help="--phase interleave: the phases (tg, none, lock, bare, barelock)")
ap.add_argument("--inner-rounds", type=int, default=12,
                help="--phase interleave: rounds of the phases (a multiple of the design's rows: n for n phases, "
                     "2n for odd n; williams())")
ap.add_argument("--lock", action="store_true")
ap.add_argument("--survive", action="store_true",
                help="--phase steady: a step that raises the race's TypeError is counted (raced_steps) and the "
                     "loop goes on, so a variant that does not prevent the race is measured too (its results "
                     "are not checked; without the GIL the steady state races: docs/benchmarks.md)")
ap.add_argument("--other-us", type=int, default=0,
                help="after each step, this many microseconds of other work without the GIL "
                     "(time.sleep, as a training step's untuned ops would): a mixed workload")
a = ap.parse_args()

HERE = os.path.dirname(os.path.abspath(__file__))
if a.backend == "cpu":
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "repro", "model"))
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "repro", "scenarios"))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import triton.testing  # noqa: E402
from triton.runtime.autotuner import Autotuner  # noqa: E402

if a.lock:  # seeds/001, verbatim in spirit: one lock around every Autotuner.run
    _lock = threading.RLock()
    _orig = Autotuner.run

    def _locked_run(self, *args, **kw):
        with _lock:
            return _orig(self, *args, **kw)

    Autotuner.run = _locked_run

benched = [0]
_count_mu = threading.Lock()


def counting_do_bench(fn, quantiles=None, **kw):
    with _count_mu:
        benched[0] += 1
    if a.backend == "gpu":  # shorter than the default 25 + 100 ms: the cells are many
        kw.setdefault("warmup", 5)
        kw.setdefault("rep", 20)
    return triton.testing.do_bench(fn, quantiles=quantiles, **kw)


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128, 256, 512) for w in (2, 4)]  # 8

if a.backend == "gpu":
    import torch

    @triton.autotune(configs=CONFIGS, key=["n"], do_bench=counting_do_bench)
    @triton.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)

    @triton.autotune(configs=CONFIGS, key=["n"], do_bench=counting_do_bench)
    @triton.jit
    def copy_(y_ptr, z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(z_ptr + offs, tl.load(y_ptr + offs, mask=m), mask=m)

    def make(n):
        x = torch.arange(n, device="cuda:0", dtype=torch.float32)
        return x, torch.empty_like(x), torch.empty_like(x)

    def grid(n):
        return lambda m: (triton.cdiv(n, m["BLOCK"]),)

    def stream_ctx():
        return torch.cuda.stream(torch.cuda.Stream())

    def finish():
        torch.cuda.synchronize()

    def correct(x, z):
        torch.cuda.synchronize()
        return bool(torch.equal(z, x + 1))
else:
    import contextlib

    from repro_tensor import Tensor

    @triton.autotune(configs=CONFIGS, key=["n"], do_bench=counting_do_bench)
    @triton.jit
    def add_one(x, y, n, BLOCK: tl.constexpr):
        for i in range(n):
            y.data[i] = x.data[i] + 1.0

    @triton.autotune(configs=CONFIGS, key=["n"], do_bench=counting_do_bench)
    @triton.jit
    def copy_(y, z, n, BLOCK: tl.constexpr):
        for i in range(n):
            z.data[i] = y.data[i]

    def make(n):
        return Tensor([float(j) for j in range(n)]), Tensor.zeros(n), Tensor.zeros(n)

    def grid(n):
        return (1,)

    def stream_ctx():
        return contextlib.nullcontext()

    def finish():
        pass

    def correct(x, z):
        return z.data == [v + 1.0 for v in x.data]


def n_of(i, base):
    # a different n per thread: tuned keys are distinct
    return base + 8 * i if a.backend == "cpu" else (base + 64 * i)


BASE = 8 if a.backend == "cpu" else 4096
errors = []


def step(n, bufs):
    x, y, z = bufs
    add_one[grid(n)](x, y, n)
    copy_[grid(n)](y, z, n)


def tune_one_at_a_time(ns):
    for n in ns:
        bufs = make(n)
        step(n, bufs)
        if not correct(bufs[0], bufs[2]):
            errors.append(f"warm-up n={n}: wrong result")
    finish()


def run_threads(body, nthreads):
    start = threading.Barrier(nthreads + 1)
    done = [None] * nthreads

    def wrap(i):
        try:
            with stream_ctx():
                start.wait()
                body(i)
                finish()
            done[i] = "ok"
        except BaseException as e:  # noqa: BLE001  (reported below)
            done[i] = f"{type(e).__name__}: {e}"

    th = [threading.Thread(target=wrap, args=(i,), name=f"w{i}") for i in range(nthreads)]
    for t in th:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in th:
        t.join()
    dt = time.perf_counter() - t0
    errors.extend(f"thread {i}: {d}" for i, d in enumerate(done) if d != "ok")
    return dt


out = {"backend": a.backend, "threads": a.threads, "phase": a.phase, "lock": a.lock,
       "options": os.environ.get("TUNERGUARD_OPTIONS", ""), "preload": bool(os.environ.get("LD_PRELOAD"))}


def warm_up():
    """Each thread's keys tuned one thread after another; each thread's
    buffers.  The steady state and the phases start from here."""
    ns = [n_of(i, BASE) for i in range(a.threads)]
    tune_one_at_a_time(ns)
    out["configs_benchmarked_warmup"] = benched[0]
    return ns, [make(n) for n in ns]


def unguarded(cls, name):
    """cls.name as its module defines it, compiled again from the module's
    source: a plain function with the module's own globals, which no guard
    wraps (tunerguard guards the class attribute, not the code).  Only for a
    method with no closure and no defaults (Autotuner.run: *args, **kwargs)."""
    mod = sys.modules[cls.__module__]
    with open(mod.__file__) as f:
        top = compile(f.read(), mod.__file__, "exec")

    def child(code, nm):
        return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == nm)

    code = child(child(top, cls.__name__), name)
    if code.co_freevars:
        sys.exit(f"serialize_cell: {cls.__name__}.{name} has a closure: it cannot be compiled again alone")
    return types.FunctionType(code, mod.__dict__, name)


def guard_kind(f, plain):
    """"guard": a method descriptor (3.11), or the function with tunerguard's
    trampoline in its vectorcall slot (plain: an unguarded function)."""
    if type(f).__name__ == "method_descriptor":
        return "guard"
    off = ctypes.c_ssize_t.from_address(id(type(f)) + 7 * ctypes.sizeof(ctypes.c_void_p)).value
    slot = lambda g: ctypes.c_void_p.from_address(id(g) + off).value  # noqa: E731
    return "guard" if slot(f) != slot(plain) else type(f).__name__


def williams(n):
    """The orders of a Williams design for n phases: each phase comes in
    each place of a round, and right after each other phase, equally often
    over the rows (n rows for even n, 2n for odd n: for 3 phases, all six
    orders).  A plain rotation put a phase after the same one in most
    rounds (of tg, none, lock: tg after lock in two rounds of three, none
    after tg in all), so whatever a phase leaves to the next (a lock's
    sleepers, a turn's slices, caches) fell mostly on one phase: the A/A
    control (tg = none without the preload) read 0.97-0.99 on the H200.  Use a multiple of the row count as rounds."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    return rows + [row[::-1] for row in rows] if n % 2 else rows


def interleave():
    """--phase interleave (the module docstring): calls/s of every phase."""
    if a.lock:
        sys.exit("serialize_cell: --phase interleave has its own lock phase; --lock does not apply")
    # The phases run with tunerguard's mode off: what a user without tunerguard has.
    off = {"bare", "barelock", "tgoff"}
    if off & set(a.interleave.split(",")) and not os.environ.get("LD_PRELOAD"):
        sys.exit("serialize_cell: the bare and barelock phases need the preload (they turn tunerguard off "
                 "for a phase)")
    ns, bufs = warm_up()
    plain = unguarded(Autotuner, "run")
    lock = threading.RLock()

    def locked(self, *args, **kw):
        with lock:
            return plain(self, *args, **kw)

    runs = {"tg": Autotuner.__dict__["run"], "none": plain, "lock": locked, "bare": plain, "barelock": locked,
            "tgoff": Autotuner.__dict__["run"]}
    names = a.interleave.split(",")
    if not names or any(p not in runs for p in names):
        sys.exit(f"serialize_cell: --interleave {a.interleave!r}: phases are tg, none, lock, bare, barelock, tgoff")
    mode = None
    counted = lambda: None  # noqa: E731  (no preload: nothing counts launches)
    insitu = None
    if os.environ.get("LD_PRELOAD"):
        import ctypes
        lib = ctypes.CDLL(os.environ["LD_PRELOAD"].split(":")[0])
        # tg_opts.mode (core/options.h: the struct's first field, TG_MODE_OFF 0), flipped only
        # between phases, while every worker waits at a barrier: a benchmark's switch, no API.
        mode = ctypes.c_int.in_dll(lib, "tg_opts")
        q = lib.tunerguard_cuda_count
        q.argtypes, q.restype = [ctypes.c_char_p], ctypes.c_ulonglong
        launch_rows = [r for r in (b"cuLaunchKernel", b"cuLaunchKernel_ptsz", b"cuLaunchKernelEx",
                                   b"cuLaunchKernelEx_ptsz") if q(r) != 2**64 - 1]

        def counted():  # the launches tunerguard recorded so far (bare's must not grow)
            return sum(q(r) for r in launch_rows)
        # The in-situ profile build (cmake -DTG_INSITU=ON, core/insitu.h): the cycles of
        # tunerguard's own part of the calls, per phase.  Other builds lack the symbol.
        core_path = next((ln.split()[-1] for ln in open("/proc/self/maps") if "libtunerguard_core" in ln), None)
        try:
            isq = ctypes.CDLL(core_path, mode=os.RTLD_NOLOAD | os.RTLD_NOW).tunerguard_insitu if core_path else None
        except (OSError, AttributeError):
            isq = None
        if isq is not None:
            isq.argtypes, isq.restype = [ctypes.c_int], ctypes.c_ulonglong
            ns_per_tick = isq(8) / 2**20
            insitu = lambda: [isq(k) for k in range(6)]  # noqa: E731
    mode_on = mode.value if mode is not None else None
    loaded = runs["tg"]  # without the preload, the module's own function: the copy must match it
    if isinstance(loaded, types.FunctionType) and loaded.__code__.co_code != plain.__code__.co_code:
        sys.exit("serialize_cell: Autotuner.run compiled again differs from the loaded one")
    out["tg_is"] = guard_kind(loaded, plain)  # guard: tunerguard's; function: none's own
    # round -1, not recorded: each phase once first (its first calls through
    # the other function, the lock's first contention); then the rounds in
    # the orders of a Williams design, its rows shuffled anew each time round
    # (seeded): rounds run back to back, so a round's first phase follows the
    # last one's, and rows in a fixed cycle would give those joins one
    # predecessor each.  Every phase records the one before it ("after").
    orders = williams(len(names))
    if a.inner_rounds % len(orders):
        print(f"serialize_cell: --inner-rounds {a.inner_rounds} is not a multiple of {len(orders)}, "
              f"the rows of the design for {len(names)} phases: the orders are not balanced", file=sys.stderr)
    rng = random.Random(11)
    rows = []
    while len(rows) < a.inner_rounds:
        rows += rng.sample(orders, len(orders))
    plan = [(-1, p) for p in names] + [(r, names[k]) for r in range(a.inner_rounds) for k in rows[r]]
    go = threading.Barrier(a.threads + 1)
    done = threading.Barrier(a.threads + 1)
    failed = []
    # Each worker's own start and end of the phase: the phase lasts from the
    # first start to the last end (the main thread's clock, read after the
    # barrier, may start late: it needs the GIL back).
    starts, ends = [0.0] * a.threads, [0.0] * a.threads

    def worker(i):
        n, b = ns[i], bufs[i]
        try:
            with stream_ctx():
                for _ in plan:
                    go.wait()
                    starts[i] = time.perf_counter()
                    for _k in range(a.steps):
                        step(n, b)
                    ends[i] = time.perf_counter()
                    done.wait()
                if not correct(b[0], b[2]):
                    errors.append(f"thread {i}: wrong result")
        except BaseException as e:  # noqa: BLE001  (reported below)
            failed.append(f"thread {i}: {type(e).__name__}: {e}")
            go.abort()
            done.abort()

    th = [threading.Thread(target=worker, args=(i,), name=f"w{i}") for i in range(a.threads)]
    for t in th:
        t.start()
    phases = []
    prev = plan[len(names) - 1][1]
    try:
        for r, p in plan:
            Autotuner.run = runs[p]  # between phases: every worker is at a barrier
            if mode is not None:
                mode.value = 0 if p in off else mode_on
            c0 = counted()
            i0 = insitu() if insitu else None
            go.wait()
            done.wait()
            dt = max(ends) - min(starts)
            if r >= 0:
                phases.append({"round": r, "phase": p, "after": prev, "calls_per_s": 2 * a.steps * a.threads / dt})
                if i0 is not None:  # ns per guarded call (own, original), per recorded CUDA call (own, real)
                    d = [b - x for b, x in zip(insitu(), i0)]
                    phases[-1]["insitu_ns"] = {
                        "guard_calls": d[0], "guard_own": d[1] * ns_per_tick / max(d[0], 1),
                        "guard_orig": d[2] * ns_per_tick / max(d[0], 1), "hook_calls": d[3],
                        "hook_own": d[4] * ns_per_tick / max(d[3], 1), "hook_real": d[5] * ns_per_tick / max(d[3], 1)}
                if c0 is not None:
                    got = phases[-1]["launches_recorded"] = counted() - c0
                    if (got == 0) != (p in off):  # bare, barelock: the hooks passed through; the others recorded
                        errors.append(f"phase {p} of round {r}: {got} launches recorded")
            prev = p
    except threading.BrokenBarrierError:
        pass
    except BaseException:
        go.abort()  # the workers leave their barriers instead of waiting for ever
        done.abort()
        raise
    finally:
        Autotuner.run = runs["tg"]
        if mode is not None:
            mode.value = mode_on
    for t in th:
        t.join()
    errors.extend(failed)
    out["phases"] = phases
    out["steps_per_phase"] = a.steps
    out["configs_benchmarked_steady"] = benched[0] - out["configs_benchmarked_warmup"]
    if out["configs_benchmarked_steady"]:
        errors.append(f"{out['configs_benchmarked_steady']} configs benchmarked after the warm-up")


if a.phase == "interleave":
    interleave()
elif a.phase == "steady":
    ns, bufs = warm_up()

    other = a.other_us / 1e6

    def raw_rate():
        """The process's own speed, untouched by the variant: the main thread
        alone launches both kernels through their JITFunction (kernel.fn: no
        Autotuner.run, so neither the lock nor tunerguard's guard), one
        config, calls/s.  Fresh processes of one build spread widely on the
        H200 machine (27k-44k calls/s for one thread), and
        a process is about as fast throughout: a cell's calls/s over its own
        raw rate takes that factor out (serialize_bench.py, "adjusted")."""
        n, (x, y, z) = ns[0], bufs[0]
        cal = max(200, a.steps // 10)
        for _ in range(2):  # the first call of this config may compile
            add_one.fn[grid(n)](x, y, n, BLOCK=128, num_warps=4)
            copy_.fn[grid(n)](y, z, n, BLOCK=128, num_warps=4)
        finish()
        t0 = time.perf_counter()
        for _ in range(cal):
            add_one.fn[grid(n)](x, y, n, BLOCK=128, num_warps=4)
            copy_.fn[grid(n)](y, z, n, BLOCK=128, num_warps=4)
        finish()
        return 2 * cal / (time.perf_counter() - t0)

    def raw_rate_or_none():
        # never the cell's failure: its figures stand without the adjustment
        try:
            return raw_rate()
        except Exception as e:  # noqa: BLE001  (recorded in the cell)
            out["raw_error"] = f"{type(e).__name__}: {e}"[:300]
            return None

    raw_before = raw_rate_or_none()

    seg = max(1, a.steps // 10)
    marks = []  # thread 0: perf_counter every tenth of its loop (is a slow cell slow throughout?)

    raced = [0] * a.threads

    def loop(i):
        n, b = ns[i], bufs[i]
        for k in range(a.steps):
            if i == 0 and k % seg == 0:
                marks.append(time.perf_counter())
            try:
                step(n, b)
            except TypeError:
                if not a.survive:
                    raise
                raced[i] += 1
            if other:
                time.sleep(other)
        if i == 0:
            marks.append(time.perf_counter())
        if not raced[i] and not correct(b[0], b[2]):
            errors.append(f"thread {i}: wrong result")

    dt = run_threads(loop, a.threads)
    out["calls"] = 2 * a.steps * a.threads
    out["seconds"] = dt
    out["calls_per_s"] = out["calls"] / dt
    out["configs_benchmarked_steady"] = benched[0] - out["configs_benchmarked_warmup"]
    if a.survive:
        out["raced_steps"] = sum(raced)
    raw_after = raw_rate_or_none() if raw_before else None
    if raw_before and raw_after:
        out["raw_per_s"] = (raw_before + raw_after) / 2  # before and after the loop: drift shows as their gap
        out["raw_before_after"] = [round(raw_before), round(raw_after)]
        out["calls_over_raw"] = out["calls_per_s"] / out["raw_per_s"]
    # thread 0's own calls/s in each tenth of its loop (the last may be shorter)
    out["thread0_segments"] = [round(2 * seg / (t1 - t0)) for t0, t1 in zip(marks, marks[1:]) if t1 > t0][:10]
else:
    # Sequential warm-up: one thread tunes its keys after another (other ns).
    seq_ns = [n_of(i, BASE + 3) for i in range(a.threads)]
    shared_seq = BASE + 5
    t0 = time.perf_counter()
    tune_one_at_a_time(seq_ns + [shared_seq])
    out["sequential_s"] = time.perf_counter() - t0
    seq_benched = benched[0]
    # Cold: every thread at once, on its own key and on one shared key.
    cold_ns = [n_of(i, BASE + 1) for i in range(a.threads)]
    shared = BASE + 7

    def cold(i):
        for n in (cold_ns[i], shared):
            b = make(n)
            for _ in range(max(1, a.steps // 100)):
                step(n, b)
            if not correct(b[0], b[2]):
                errors.append(f"thread {i}: wrong result on n={n}")

    out["cold_s"] = run_threads(cold, a.threads)
    out["cold_over_sequential"] = out["cold_s"] / out["sequential_s"]
    out["configs_benchmarked_sequential"] = seq_benched
    out["configs_benchmarked_cold"] = benched[0] - seq_benched
    # each key once: (threads + 1 shared) keys x 2 kernels x 8 configs
    out["configs_expected"] = (a.threads + 1) * 2 * len(CONFIGS)

# the interpreter, and whether the GIL was on at the end (a free-threaded build: PYTHON_GIL,
# or an import that turned it on)
import sysconfig  # noqa: E402
out["python"] = sys.version.split()[0] + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")
out["gil"] = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
out["errors"] = errors[:5]
out["ok"] = not errors
print(json.dumps(out))
sys.exit(0 if not errors else 1)
