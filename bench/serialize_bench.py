#!/usr/bin/env python3
"""What serialize costs against what users would pick instead.

  python3 bench/serialize_bench.py --lib build/libtunerguard.so [--backend cpu|gpu]
        [--threads 2,4,8] [--rounds 3] [--steps N] [--cold] [--cpus LIST|gpu] [--json OUT]

For each thread count and round, one fresh process per variant, the variants
of a row run back to back in a rotating order (so drift of a noisy machine
does not always favour the same one):
  none       no tunerguard
  lock       the global RLock of seeds/001 around Autotuner.run, no tunerguard
  detect     LD_PRELOAD=libtunerguard.so (mode=detect)
  serialize  LD_PRELOAD=libtunerguard.so, mode=serialize
The cell is bench/serialize_cell.py (its docstring says what one cell does).
Prints a Markdown table of medians (and min-max) of calls/s with the ratios
to `none` and to the better of none and lock; with --cold, a second table of
the cold start (all threads at once on cold keys) against the sequential
warm-up measured in the same process, and the configs benchmarked (each key
tuned once: the count equals the number of keys times configs).

--backend cpu needs the stand-in libcuda (build/tests/fakecuda) and the
model of Triton (tests/repro/model): the shape without a GPU.  A benchmark,
not a test: it asserts only that every cell computed the right results."""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VARIANTS = ("none", "lock", "detect", "serialize")

ap = argparse.ArgumentParser()
ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libtunerguard.so"))
ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
ap.add_argument("--threads", default="2,4,8")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--steps", type=int, default=None, help="calls per thread per kernel (default: cpu 1500, gpu 20000: shorter GPU cells spread more)")
ap.add_argument("--cold", action="store_true", help="also the cold-start table")
ap.add_argument("--survive", action="store_true",
                help="steady state: a step that raises the race's TypeError is counted and the loop goes on "
                     "(serialize_cell.py --survive), so that a variant that does not prevent the race (none, "
                     "detect: every cell without the GIL) is measured; the steps that raced are listed")
ap.add_argument("--cold-only", action="store_true", help="only the cold-start table")
ap.add_argument("--variants", default=",".join(VARIANTS))
ap.add_argument("--other-us", type=int, default=0,
                help="steady state: after each step, N us of other work without the GIL (serialize_cell.py)")
ap.add_argument("--options", default="", help="more TUNERGUARD_OPTIONS for detect and serialize")
ap.add_argument("--extra", action="append", default=[], metavar="NAME=MODE:LIB[:OPTIONS]",
                help="one more variant: LIB preloaded in MODE (detect, serialize or off), with more "
                     "TUNERGUARD_OPTIONS if given (a:b=1:c=2), for builds or settings side by side")
ap.add_argument("--cpus", default=None, metavar="LIST|gpu",
                help="run every cell on these CPUs only (os.sched_setaffinity before exec: 0-7,16-23), "
                     "or gpu: the CPUs sysfs lists as local to the first NVIDIA GPU; the same set for "
                     "every variant, so where the scheduler puts a process is not part of the spread")
ap.add_argument("--interleave", default=None, metavar="PHASES",
                help="in-process ratios instead: each cell one process of a variant (none: no preload) "
                     "whose threads run these phases in turn, from tg, none, lock, bare, barelock "
                     "(serialize_cell.py --phase interleave); --steps per phase, --inner-rounds rounds of "
                     "phases per process")
ap.add_argument("--inner-rounds", type=int, default=12, help="--interleave: rounds of phases per process "
                "(a multiple of the design's rows: n for n phases, 2n for odd n; serialize_cell.py "
                "williams())")
ap.add_argument("--json", default=None, help="write every cell's JSON here")
ap.add_argument("--python", default=sys.executable)
ap.add_argument("--gil", choices=("0", "1"), default=None,
                help="a free-threaded --python: PYTHON_GIL for every cell; a cell that ends in the other "
                     "state (sys._is_gil_enabled()) fails")
ap.add_argument("--from-json", default=None,
                help="print the tables of earlier --json files (comma separated: pooled), run nothing")
a = ap.parse_args()
steps = a.steps or ((400 if a.backend == "cpu" else 2500) if a.interleave else (1500 if a.backend == "cpu" else 20000))
if a.interleave and a.other_us:
    sys.exit("serialize_bench: --other-us is not measured with --interleave (its phases are tuned calls only)")
threads = [int(x) for x in a.threads.split(",")]
variants = a.variants.split(",")
lib = os.path.abspath(a.lib)
extra = {}  # name -> (mode, lib, more options)
for e in a.extra:
    name, _, rest = e.partition("=")
    mode, _, rest = rest.partition(":")
    elib, _, eopts = rest.partition(":")
    if not name or name in VARIANTS or mode not in ("detect", "serialize", "off") or not elib:
        sys.exit(f"serialize_bench: --extra {e!r}: expected NAME=detect|serialize|off:LIB[:OPTIONS], "
                 f"NAME not one of {', '.join(VARIANTS)}")
    extra[name] = (mode, os.path.abspath(elib), eopts)
    if name not in variants:  # named in --variants too: once, not twice a round
        variants.append(name)


def parse_cpus(spec):
    if spec == "gpu":  # the PCI device of class 0x0302/0x0300 with vendor 0x10de: its NUMA-local CPUs
        base = "/sys/bus/pci/devices"
        for d in sorted(os.listdir(base)):
            try:
                with open(f"{base}/{d}/vendor") as f, open(f"{base}/{d}/class") as g:
                    if f.read().strip() == "0x10de" and g.read().strip()[:6] in ("0x0302", "0x0300"):
                        with open(f"{base}/{d}/local_cpulist") as h:
                            spec = h.read().strip()
                        break
            except OSError:
                continue
        else:
            sys.exit("serialize_bench: --cpus gpu: no NVIDIA GPU found under /sys/bus/pci/devices")
    cpus = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        try:
            cpus.update(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            sys.exit(f"serialize_bench: --cpus {spec!r}: expected a list such as 0-7,16-23")
    return cpus


cpus = parse_cpus(a.cpus) if a.cpus else None
if cpus:
    print(f"# cells run on CPUs {','.join(map(str, sorted(cpus)))}", file=sys.stderr)


def env_for(variant, workdir):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("TUNERGUARD_OPTIONS", None)
    env.pop("TG_BENCH_PAD", None)
    if a.gil is not None:
        env["PYTHON_GIL"] = a.gil
    if a.backend == "cpu":
        fake = os.path.join(os.path.dirname(lib), "tests", "fakecuda")
        env["LD_LIBRARY_PATH"] = fake + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    else:
        env.setdefault("TRITON_CACHE_DIR", os.path.join(workdir, "triton-cache"))
    if variant in ("detect", "serialize") or variant in extra:
        mode, vlib, vopts = extra.get(variant, (variant, lib, ""))
        env["LD_PRELOAD"] = vlib
        opts = [f"mode={mode}", f"log_path={workdir}/tg"]
        if a.options:
            opts.append(a.options)
        if vopts:
            opts.append(vopts)
        env["TUNERGUARD_OPTIONS"] = ":".join(opts)
    return env


# The in-process phases with tunerguard's mode off (serialize_cell.py): its CUDA hooks pass
# through, so they are what a user without tunerguard has; a process without the preload has none.
OFF_PHASES = ("bare", "barelock")
# tgoff: the guard left in Autotuner.run with the mode off (it calls the original straight
# away): what calling through the guard's C method descriptor costs with no tunerguard work.
DIAG_PHASES = ("tgoff",)


def cell_cmd(variant, n, phase):
    cmd = [a.python, os.path.join(HERE, "serialize_cell.py"), "--backend", a.backend, "--threads", str(n),
           "--steps", str(steps), "--phase", phase]
    if phase == "interleave":  # bare, barelock turn the preload's mode off for a phase: none has no preload
        names = [p for p in a.interleave.split(",") if p not in OFF_PHASES + DIAG_PHASES or variant != "none"]
        return cmd + ["--interleave", ",".join(names), "--inner-rounds", str(a.inner_rounds)]
    if variant == "lock":
        cmd.append("--lock")
    if a.other_us and phase == "steady":
        cmd += ["--other-us", str(a.other_us)]
    if a.survive and phase == "steady":
        cmd.append("--survive")
    return cmd


def start_bytes(cmd, env):
    """What execve puts above a new process's stack: its argument and environment strings."""
    return sum(len(x) + 1 for x in cmd) + sum(len(k) + len(v) + 2 for k, v in env.items())


PAD = "TG_BENCH_PAD"


def padded_env(variant, n, phase, workdir):
    """The cell's environment, padded (TG_BENCH_PAD) to the size the largest of the row's
    variants needs: the strings execve copies onto a new process's stack shift where its
    stack starts, and so how the interpreter's hot stack data falls on cache lines, by a
    different amount per variant (LD_PRELOAD, TUNERGUARD_OPTIONS, --lock); a known source
    of per-build speed differences of several percent that belong to no build (Mytkowicz
    et al., "Producing wrong data without doing anything obviously wrong!", ASPLOS 2009).
    Padded, every variant of a row starts from the same size."""
    sizes = {v: start_bytes(cell_cmd(v, n, phase), env_for(v, workdir)) for v in variants}
    target = max(sizes.values()) + len(PAD) + 2
    env = env_for(variant, workdir)
    env[PAD] = "x" * (target - sizes[variant] - len(PAD) - 2)
    return env


def cell(variant, n, phase, workdir):
    cmd = cell_cmd(variant, n, phase)
    env = padded_env(variant, n, phase, workdir)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800,
                       preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        res = {"ok": False, "errors": [p.stderr.strip()[-400:]], "backend": a.backend, "threads": n, "phase": phase}
    res["variant"] = variant
    res["rc"] = p.returncode
    res["load"] = os.getloadavg()[0]  # the machine's 1-minute load as the cell ended
    if a.gil is not None and res.get("ok") and res.get("gil") != (a.gil == "1"):
        res["ok"] = False
        res["errors"] = [f"the GIL was {'on' if res.get('gil') else 'off'} at the cell's end, not as PYTHON_GIL={a.gil}"]
    summary = [ln for ln in p.stderr.splitlines() if ln.startswith("tunerguard: ") and
               re.search(r"races? reported|prevented by serialize|calls? serialized|on already tuned keys", ln)]
    if summary:  # the exit summary: waits and overlaps
        res["summary"] = summary[-1]
    if p.returncode != 0 or not res.get("ok"):
        print(f"# {variant} threads={n} {phase}: FAILED rc={p.returncode} {res.get('errors')}", file=sys.stderr)
    return res


def fmt(v):
    return f"{v:,.0f}"


workdir = os.path.abspath(os.environ.get("TG_BENCH_DIR", "/tmp/tg-serialize-bench"))
os.makedirs(workdir, exist_ok=True)
cells = []
phases = ([] if a.cold_only else ["steady"]) + (["cold"] if a.cold or a.cold_only else [])
if a.interleave:  # one process per variant holds every phase; a lock process would repeat none's
    phases = ["interleave"]
    variants = [v for v in variants if v != "lock"]
a.cold = a.cold or a.cold_only
if a.from_json:  # one file, or several (comma separated): their cells pooled
    for i, path in enumerate(a.from_json.split(",")):
        with open(path) as f:
            for c in json.load(f):
                if "phase" not in c or "threads" not in c:
                    continue  # a crashed cell of an older file
                if c["phase"] == "interleave":  # the phases the files hold, in the usual order
                    held = {x["phase"] for x in c.get("phases", [])} | set((a.interleave or "").split(","))
                    a.interleave = ",".join(p for p in ("tg", "none", "lock") + OFF_PHASES + DIAG_PHASES
                                            if p in held)
                c["round"] += 1000 * i
                cells.append(c)
    phases = []
    a.cold = any(c.get("phase") == "cold" for c in cells)
    threads = sorted({c["threads"] for c in cells})
    seen = {c["variant"] for c in cells}  # the variants the files hold, the usual ones first
    variants = [v for v in VARIANTS if v in seen] + sorted(seen - set(VARIANTS))
    def mode_of(v):
        opts = next((c.get("options", "") for c in cells if c["variant"] == v), "")
        return next((o[5:] for o in opts.split(":") if o.startswith("mode=")), "serialize")
    extra = {v: extra.get(v, (mode_of(v), "", "")) for v in variants if v not in VARIANTS}
    a.rounds = len({c["round"] for c in cells})
    # calls = threads x steps x 2 kernels in every steady cell that ran
    per = {c["calls"] // (2 * c["threads"]) for c in cells if c.get("phase") == "steady" and c.get("calls")}
    steps = a.steps or (per.pop() if len(per) == 1 else "?")
for phase in phases:
    for n in threads:
        for r in range(a.rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                res = cell(v, n, phase, workdir)
                res["round"] = r
                cells.append(res)
                if a.json:  # after every cell: a run cut short keeps what it measured
                    with open(a.json, "w") as f:
                        json.dump(cells, f, indent=1)
                print(f"# {phase} threads={n} round={r} {v}: "
                      + (" ".join(f"{x['phase']} {fmt(x['calls_per_s'])}" for x in res.get("phases", []))
                         if phase == "interleave" else
                         fmt(res["calls_per_s"]) + " calls/s" if phase == "steady" and "calls_per_s" in res
                         else f"{res.get('cold_s', float('nan')):.3f} s cold, "
                              f"{res.get('sequential_s', float('nan')):.3f} s sequential"),
                      file=sys.stderr, flush=True)

if a.json:
    with open(a.json, "w") as f:
        json.dump(cells, f, indent=1)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def failed_as(n, v, phase):
    """A cell of a variant with no good cell: what its first failure raised (none on cold keys: the
    race, TypeError), or - where it did not run."""
    bad = [c for c in cells if c["phase"] == phase and c["threads"] == n and c["variant"] == v]
    if not bad:
        return "-"
    err = (bad[0].get("errors") or ["?"])[0]
    return f"failed {len(bad)}/{len(bad)} ({err.split(': ', 2)[1] if err.count(': ') >= 2 else err[:40]})"


def paired(n, num, dens, key="calls_per_s"):
    """The median over rounds of one round's ratio (its cells ran back to back), with
    the rounds' min-max: drift of the machine between rounds cancels out, which a
    ratio of medians pooled over runs of different speed does not."""
    rs = []
    for r in sorted({c["round"] for c in cells if c["phase"] == "steady" and c["threads"] == n}):
        got = {c["variant"]: c[key] for c in cells if c["phase"] == "steady" and c["threads"] == n
               and c["round"] == r and c.get("ok") and key in c}
        ds = [got[d] for d in dens if d in got]
        if num in got and len(ds) == len(dens):
            rs.append(got[num] / max(ds))
    return f"{med(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})" if rs else "-"


def has_detect_ratio():
    return "detect" in variants and "none" in variants


def has_serialize_ratio():
    return "serialize" in variants and ("none" in variants or "lock" in variants)


def ratio_header(last=""):
    """The ratio columns both tables share, after the variants' own (and `last`); a ratio
    whose variants were not run has no column."""
    others = [v for v in variants if v in extra]
    cols = (["detect / none"] if has_detect_ratio() else []) \
        + (["serialize / best of none, lock"] if has_serialize_ratio() else []) \
        + [f"{v} / {'best' if extra[v][0] == 'serialize' else 'none'}" for v in others] \
        + (["paired: detect / none"] if has_detect_ratio() else []) \
        + (["paired: serialize / best"] if has_serialize_ratio() else []) + ([last] if last else [])
    print("| threads | " + " | ".join(variants + cols) + " |")
    print("| --- |" + " --- |" * (len(variants) + len(cols)))


def ratio_cells(n, meds, key):
    """The ratio columns of row n: of the medians meds (variant -> value), each other build
    against the best of none and lock (serialize) or none (detect, off), and the paired ones."""
    nan = float("nan")
    best = max((m for m in (meds.get("none"), meds.get("lock")) if m == m and m is not None), default=nan)
    out = ""
    if has_detect_ratio():
        out += f" {meds.get('detect', nan) / meds.get('none', nan):.2f}x |"
    if has_serialize_ratio():
        out += f" {meds.get('serialize', nan) / best:.2f}x |"
    out += "".join(f" {meds[v] / (best if extra[v][0] == 'serialize' else meds.get('none', nan)):.2f}x |"
                   for v in variants if v in extra)
    if has_detect_ratio():
        out += f" {paired(n, 'detect', ['none'], key)} |"
    if has_serialize_ratio():
        out += f" {paired(n, 'serialize', ['none', 'lock'], key)} |"
    return out


def interp_line():
    """The interpreters, GIL states and 1-minute loads the cells ran with, where the cells say."""
    pys = sorted({c["python"] for c in cells if c.get("python")})
    gils = sorted({"on" if c["gil"] else "off" for c in cells if "gil" in c})
    loads = sorted(c["load"] for c in cells if "load" in c)
    return ((f"; Python {', '.join(pys)}" if pys else "") + (f", GIL {' and '.join(gils)}" if gils else "")
            + (f"; load {statistics.median(loads):.1f} (median; {loads[0]:.1f}-{loads[-1]:.1f})" if loads else ""))


def steady_table():
    if not any(c["phase"] == "steady" for c in cells):
        return  # --cold-only
    print(f"steady state, backend {cells[0].get('backend', a.backend) if cells else a.backend}, {steps} steps per thread (2 calls each), {a.rounds} rounds, "
          "median calls/s (min-max)" + interp_line() + "\n")
    ratio_header()
    for n in threads:
        row, meds = [], {}
        for v in variants:
            xs = [c["calls_per_s"] for c in cells if c["phase"] == "steady" and c["threads"] == n
                  and c["variant"] == v and c.get("ok")]
            meds[v] = med(xs)
            row.append(f"{fmt(meds[v])} ({fmt(min(xs))}-{fmt(max(xs))})" if xs else failed_as(n, v, "steady"))
        print(f"| {n} | " + " | ".join(row) + " |" + ratio_cells(n, meds, "calls_per_s"))


def adjusted_table():
    """The same rows over each process's own raw rate (serialize_cell.py: the main thread alone,
    both kernels through kernel.fn, no tuner in the call): the share of a fresh process's speed
    that a variant keeps.  Fresh processes of one variant spread widely on the H200 machine, and
    a process is about as fast throughout, so this takes the process's factor out of every
    comparison.  The raw rate runs through tunerguard's launch hook under the preload (8-28 ns of
    a launch, docs/benchmarks.md), the one cost of the variant it holds."""
    st = [c for c in cells if c["phase"] == "steady" and c.get("ok") and "calls_over_raw" in c]
    failed = [c for c in cells if c["phase"] == "steady" and c.get("raw_error")]
    if failed:
        print(f"# the raw rate failed in {len(failed)} cell(s), first: {failed[0]['raw_error']}", file=sys.stderr)
    if not st:
        return

    def cv(xs):  # spread: standard deviation over the mean
        return statistics.pstdev(xs) / statistics.mean(xs) if len(xs) > 1 else float("nan")

    print("\nadjusted: each cell's calls/s over its own process's raw calls/s (which also divides out the "
          "preload's effect on a whole process: see the raw line below), medians of the rounds (min-max); "
          "spread = standard deviation over mean of a variant's cells, calls/s -> adjusted\n")
    ratio_header("spread")
    for n in threads:
        meds, row, spread = {}, [], []
        for v in variants:
            cs = [c for c in st if c["threads"] == n and c["variant"] == v]
            xs = [c["calls_over_raw"] for c in cs]
            meds[v] = med(xs)
            row.append(f"{meds[v]:.3f} ({min(xs):.3f}-{max(xs):.3f})" if xs else "-")
            if len(xs) > 1:
                spread.append(f"{v} {100 * cv([c['calls_per_s'] for c in cs]):.0f}->{100 * cv(xs):.0f} %")
        print(f"| {n} | " + " | ".join(row) + " |" + ratio_cells(n, meds, "calls_over_raw") + f" {', '.join(spread)} |")
    # The adjustment divides out whatever slows a whole process, the preload's own effect on it
    # included (its mappings, its thread-locals): that effect, on the raw loop, is here.
    raw = {v: med([c["raw_per_s"] for c in st if c["variant"] == v]) for v in variants}
    print("\nraw calls/s, median of each variant's cells (no tuner in the call; under the preload, its launch "
          "hook): " + ", ".join(f"{v} {fmt(raw[v])}" for v in variants if raw[v] == raw[v])
          + "".join(f"; {v} / none {raw[v] / raw['none']:.2f}x" for v in variants
                    if v not in ("none", "lock") and raw.get(v) == raw.get(v) and raw.get("none") == raw.get("none")))


def boot_ci(groups, reps=2000):
    """95 % interval of the median of the pooled values of groups (one list per process), by a
    two-stage bootstrap: processes drawn with replacement, then each drawn process's rounds; so
    that a process that is slow throughout widens the interval as it should.  Seeded: the same
    cells print the same interval."""
    rng = random.Random(13)
    groups = [g for g in groups if g]
    if not groups:
        return float("nan"), float("nan")
    meds = []
    for _ in range(reps):
        pool = []
        for g in rng.choices(groups, k=len(groups)):
            pool.extend(rng.choices(g, k=len(g)))
        meds.append(med(pool))
    meds.sort()
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]


def interleave_table():
    """--interleave: each ratio is taken inside one round of one process (its phases ran back to
    back, within a second or two), then pooled over every round of every process of the variant.
    The first ratio column is the one a variant is judged by, against what a user without
    tunerguard has: detect against bare (the unguarded function with tunerguard's mode off, so its
    CUDA hooks pass through) where the process ran it, else against none (the hooks on); serialize
    against whichever of bare and barelock (the lock, mode off) is the better over all its rounds
    where it ran them, else of none and lock (taking the better round by round would favour the
    baseline by the phases' own noise); none, the process without the preload, where tg is none's
    own function: the A/A control, which reads 1 but for noise and order effects.  With a 95 %
    interval (boot_ci); the others median (min-max); per process = that first ratio's median in
    each process (the spread between processes)."""
    cs = [c for c in cells if c["phase"] == "interleave" and c.get("ok")]
    if not cs:
        return
    held = a.interleave.split(",")
    steps_held = sorted({c.get("steps_per_phase", steps) for c in cs})
    print(f"in-process ratios, backend {cs[0].get('backend', a.backend)}, {'/'.join(map(str, steps_held))} "
          f"steps per thread and phase, phases {a.interleave}: each ratio within one round of one process "
          "(tg = the process's Autotuner.run: tunerguard's guard under the preload; bare, barelock = none, "
          "lock with tunerguard's mode off), pooled over rounds and processes; judged by = detect: tg / bare "
          "(else tg / none), serialize: tg / the better of bare and barelock (else of none and lock) over "
          "all its rounds, none (no preload): tg / none, the A/A control; median [95 % interval], others "
          "median (min-max)\n")
    ratios = (("tg", ("none",)), ("tg", ("bare",)), ("tg", ("lock",)), ("tg", ("none", "lock")),
              ("lock", ("none",)), ("none", ("bare",)), ("lock", ("barelock",)), ("tgoff", ("bare",)),
              ("tg", ("tgoff",)))
    ratios = tuple(r for r in ratios if all(p in held for p in (r[0], *r[1])))
    print("| threads | process | processes / rounds | judged by | "
          + " | ".join(f"{num} / {' or '.join(den) if len(den) == 1 else 'best of none, lock'}"
                       for num, den in ratios) + " | per process: judged by | against the none process |")
    print("| --- | --- | --- | --- |" + " --- |" * (len(ratios) + 2))

    def each(c, num, den):
        by = {}
        for x in c["phases"]:
            by.setdefault(x["round"], {})[x["phase"]] = x["calls_per_s"]
        return [g[num] / max(g[d] for d in den) for g in by.values()
                if num in g and all(d in g for d in den)]

    def phase_med(cells_, p):
        xs = [x["calls_per_s"] for c in cells_ for x in c["phases"] if x["phase"] == p]
        return med(xs) if xs else None

    def judge_of(mine, serial):
        """The ratio a process is judged by: against the mode-off phases where every process of
        the row ran them, else against the hooks-on ones."""
        ran = set.intersection(*({x["phase"] for x in c["phases"]} for c in mine))
        plain, locked = OFF_PHASES if set(OFF_PHASES) <= ran or (
            not serial and OFF_PHASES[0] in ran) else ("none", "lock")
        if serial and locked in ran:
            lock_plain = [x for c in mine for x in each(c, locked, (plain,))]
            return ("tg", (locked if lock_plain and med(lock_plain) >= 1 else plain,)), True
        return ("tg", (plain,)), False

    for n in threads:
        # The process without the preload: what the user has without tunerguard (its tg phase is
        # the module's own Autotuner.run) or with the seeds/001 lock instead (its lock phase).
        base = [c for c in cs if c["threads"] == n and c["variant"] == "none"]
        base_none, base_lock = phase_med(base, "tg"), phase_med(base, "lock")
        for v in variants:
            mine = [c for c in cs if c["threads"] == n and c["variant"] == v]
            if not mine:
                continue
            serial = (extra[v][0] if v in extra else v) == "serialize"
            judge, better = judge_of(mine, serial) if v != "none" else (("tg", ("none",)), False)
            groups = [each(c, *judge) for c in mine]
            pooled = [x for g in groups for x in g]
            lo, hi = boot_ci(groups)
            label = f"tg / {judge[1][0]}" + (" (the better)" if better else "")
            row = [f"{label} {med(pooled):.3f}x "
                   f"[{lo:.3f}-{hi:.3f}]" if pooled else "-"]
            for num, den in ratios:
                rs = [x for c in mine for x in each(c, num, den)]
                row.append(f"{med(rs):.3f}x ({min(rs):.2f}-{max(rs):.2f})" if rs else "-")
            nrounds = sum(len({x["round"] for x in c["phases"]}) for c in mine)
            # Across processes: this process's tg phases against the none process's (serialize: the
            # better of its tg and lock), medians of the phases over all rounds.  The whole preload's
            # cost is in it, and the spread between processes too (a few processes only).
            across = "-"
            mine_tg = phase_med(mine, "tg")
            if v != "none" and mine_tg and base_none:
                best = max(base_none, base_lock or 0) if serial else base_none
                vs = "the better of its tg, lock" if serial and base_lock else "its tg"
                across = f"{mine_tg / best:.3f}x ({vs})"
            print(f"| {n} | {v if v != 'none' else 'none (no preload)'} | {len(mine)} / {nrounds} | "
                  + " | ".join(row) + f" | {', '.join(f'{med(g):.2f}' for g in groups if g)} | {across} |")


if a.interleave:
    interleave_table()
else:
    steady_table()
    adjusted_table()
    if a.survive:  # the steps whose calls raised the race's TypeError, per variant: min-max over the cells
        print("\nsteps that raced (--survive: TypeError caught, the step not checked), min-max over a row's cells: " +
              "; ".join(f"{n} threads " + ", ".join(
                  f"{v} {min(r)}-{max(r)}" for v in variants
                  for r in [[c.get("raced_steps", 0) for c in cells if c["phase"] == "steady" and c["threads"] == n
                             and c["variant"] == v and c.get("ok")]] if r) for n in threads))

if a.cold:
    print(f"\ncold start, all threads at once on cold keys, {a.rounds} rounds, median seconds; "
          "ratio = cold / sequential warm-up of the same keys count in the same process\n")
    print("| threads | " + " | ".join(f"{v} cold (ratio)" for v in variants) +
          " | configs benchmarked (expected) |")
    print("| --- |" + " --- |" * (len(variants) + 1))
    for n in threads:
        row, counts = [], []
        for v in variants:
            cs = [c for c in cells if c["phase"] == "cold" and c["threads"] == n and c["variant"] == v and c.get("ok")]
            if not cs:
                row.append(failed_as(n, v, "cold"))
                continue
            row.append(f"{med([c['cold_s'] for c in cs]):.3f} ({med([c['cold_over_sequential'] for c in cs]):.2f}x)")
            counts.append(f"{v} {sorted(set(c['configs_benchmarked_cold'] for c in cs))}")
        exp = next((c["configs_expected"] for c in cells if c["phase"] == "cold" and c["threads"] == n
                    and "configs_expected" in c), "?")
        print(f"| {n} | " + " | ".join(row) + f" | {', '.join(counts)} ({exp}) |")

sys.exit(0 if all(c.get("ok") for c in cells) else 1)
