#!/usr/bin/env python3
"""isolate_tuning on a real GPU: how much do benchmark timings
and the chosen config move when another thread hammers the same GPU while an
autotuned kernel is tuned, with and without tunerguard's isolate_tuning=1?

  python3 tests/gpu/isolate_tuning.py --lib build/libtunerguard.so --runs 8 [--out DIR]

For each variant it runs --runs fresh child processes (fresh TRITON_CACHE_DIR,
so nothing is cached on disk and every run benchmarks every config):
  alone     tunerguard preloaded (detect), no hammer: the reference timings
  load      hammer thread on, isolate_tuning=0
  isolated  hammer thread on, isolate_tuning=1
  other_device  (asked for with --variant, needs two GPUs) the hammer on
            device 1 while device 0 tunes: tunerguard must write no
            interference report, and the timings should match alone's
A child: thread "hammer" loops a 8192^3 fp16 torch.matmul on its own stream
(synchronizing each iteration, so at most one queued); once it runs, the main
thread calls an autotuned Triton matmul (8 configs) once; the Autotuner's
configs_timings (median, p20, p80 per config) and best_config are recorded.
Printed (and written to DIR/summary.json): per variant, per config the mean,
stdev and coefficient of variation of the median timing across runs, the
relative error against alone's, how often each config won, and the number of
interference reports tunerguard wrote.  Needs torch + triton + one GPU.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile


def child(args):
    import threading

    import torch
    import triton
    import triton.language as tl

    configs = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w, num_stages=s)
        for (bm, bn, bk, w, s) in [(128, 128, 32, 4, 3), (128, 128, 64, 8, 3), (64, 128, 32, 4, 4),
                                   (128, 64, 32, 4, 4), (64, 64, 32, 4, 4), (256, 128, 64, 8, 3),
                                   (128, 256, 64, 8, 3), (32, 64, 32, 2, 5)]
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid = tl.program_id(0)
        npn = tl.cdiv(N, BLOCK_N)
        pm, pn = pid // npn, pid % npn
        rm = pm * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pn * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            am = (rm[:, None] < M) & (rk[None, :] + k * BLOCK_K < K)
            bm = (rk[:, None] + k * BLOCK_K < K) & (rn[None, :] < N)
            acc += tl.dot(tl.load(a, mask=am, other=0.0), tl.load(b, mask=bm, other=0.0))
            a += BLOCK_K * sak
            b += BLOCK_K * sbk
        c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    dev = torch.device("cuda:0")
    M = N = K = args.size
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    c = torch.empty(M, N, device=dev, dtype=torch.float16)

    stop = threading.Event()
    running = threading.Event()
    iters = [0]

    hdev = torch.device(f"cuda:{args.hammer_device}")

    def hammer():
        s = torch.cuda.Stream(device=hdev)
        x = torch.randn(8192, 8192, device=hdev, dtype=torch.float16)
        y = torch.randn(8192, 8192, device=hdev, dtype=torch.float16)
        with torch.cuda.device(hdev), torch.cuda.stream(s):
            while not stop.is_set():
                torch.matmul(x, y)
                s.synchronize()
                iters[0] += 1
                if iters[0] == 3:
                    running.set()

    h = None
    if args.hammer:
        h = threading.Thread(target=hammer, name="hammer", daemon=True)
        h.start()
        running.wait(60)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1))
    torch.cuda.synchronize()
    hammer_iters = iters[0]
    stop.set()
    if h is not None:
        h.join(60)
    timings = {str(cfg): [float(v) for v in (t if isinstance(t, (list, tuple)) else [t])]
               for cfg, t in (matmul_kernel.configs_timings or {}).items()}
    print(json.dumps({"best": str(matmul_kernel.best_config), "timings": timings,
                      "hammer_iters": hammer_iters}))


def run_variant(args, name, hammer, isolate, outdir, hammer_device=0):
    runs = []
    for i in range(args.runs):
        work = tempfile.mkdtemp(prefix=f"iso-{name}-{i}-", dir=outdir)
        env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(work, "cache"), PYTHONUNBUFFERED="1",
                   LD_PRELOAD=os.path.abspath(args.lib),
                   TUNERGUARD_OPTIONS=f"mode=detect:isolate_tuning={isolate}:log_path={work}/tg"
                                      + (f":{args.options}" if args.options else ""))
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--size", str(args.size)]
        if hammer:
            cmd += ["--hammer", "--hammer-device", str(hammer_device)]
        p = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=args.timeout)
        line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("{")), None)
        if p.returncode != 0 or line is None:
            sys.stderr.write(f"{name} run {i}: exit {p.returncode}\n{p.stderr[-3000:]}\n")
            continue
        rec = json.loads(line)
        n_itf = 0
        for f in glob.glob(os.path.join(work, "tg.*.jsonl")):
            with open(f) as fh:
                n_itf += sum(1 for ln in fh if '"kind":"interference"' in ln)
        rec["interference_reports"] = n_itf
        rec["tunerguard_stderr"] = [ln for ln in p.stderr.splitlines() if "tunerguard" in ln][-3:]
        runs.append(rec)
        sys.stderr.write(f"{name} run {i}: best {rec['best']}, interference reports {n_itf}\n")
    return runs


def summarize(variants):
    alone = variants.get("alone", [])
    ref = {}
    for cfg in {c for r in alone for c in r["timings"]}:
        vals = [r["timings"][cfg][0] for r in alone if cfg in r["timings"]]
        if vals:
            ref[cfg] = statistics.fmean(vals)
    out = {}
    for name, runs in variants.items():
        cfgs = sorted({c for r in runs for c in r["timings"]})
        per = {}
        for cfg in cfgs:
            vals = [r["timings"][cfg][0] for r in runs if cfg in r["timings"]]
            m = statistics.fmean(vals)
            sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
            per[cfg] = {"mean_ms": round(m, 5), "stdev_ms": round(sd, 5), "cv": round(sd / m, 4) if m else None,
                        "rel_err_vs_alone": round(m / ref[cfg] - 1, 4) if cfg in ref and ref[cfg] else None}
        wins = {}
        for r in runs:
            wins[r["best"]] = wins.get(r["best"], 0) + 1
        cvs = [v["cv"] for v in per.values() if v["cv"] is not None]
        errs = [abs(v["rel_err_vs_alone"]) for v in per.values() if v["rel_err_vs_alone"] is not None]
        out[name] = {"runs": len(runs), "chosen": wins, "per_config": per,
                     "median_cv": round(statistics.median(cvs), 4) if cvs else None,
                     "median_abs_rel_err_vs_alone": round(statistics.median(errs), 4) if errs else None,
                     "interference_reports": [r["interference_reports"] for r in runs],
                     "hammer_iters": [r["hammer_iters"] for r in runs]}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", help="libtunerguard.so")
    p.add_argument("--runs", type=int, default=8)
    p.add_argument("--size", type=int, default=4096, help="M = N = K of the tuned matmul")
    p.add_argument("--out", help="directory for the per-run reports and summary.json (default: a temp dir)")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--options", default="", help="more TUNERGUARD_OPTIONS for every run (e.g. suppressions=FILE)")
    p.add_argument("--variant", action="append", choices=["alone", "load", "isolated", "other_device"])
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--hammer", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--hammer-device", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    if not args.lib or not os.path.isfile(args.lib):
        p.error("--lib must name libtunerguard.so")
    outdir = args.out or tempfile.mkdtemp(prefix="isolate-tuning-")
    os.makedirs(outdir, exist_ok=True)
    spec = {"alone": (False, 0, 0), "load": (True, 0, 0), "isolated": (True, 1, 0), "other_device": (True, 0, 1)}
    variants = {}
    for name in args.variant or ["alone", "load", "isolated"]:
        hammer, iso, hdev = spec[name]
        variants[name] = run_variant(args, name, hammer, iso, outdir, hdev)
    summary = {"runs_per_variant": args.runs, "size": args.size, "variants": summarize(variants), "raw": variants}
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    brief = dict(summary)
    brief.pop("raw")
    print(json.dumps(brief, indent=1))
    sys.stderr.write(f"full data: {os.path.join(outdir, 'summary.json')}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
