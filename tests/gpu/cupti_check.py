#!/usr/bin/env python3
"""cupti=1 on the GPU machine, one command, one JSON document on stdout:

  python3 tests/gpu/cupti_check.py --lib build/libtunerguard.so [--out DIR]

 (a) interference: a Triton autotuned matmul tuned on cuda:0 while a "hammer"
     thread launches matmuls on the same device (loaded), and alone,
     under cupti=1 (and loaded under cupti=0 for comparison): the
     interference reports with their "gpu" verdict (overlap_us, kernels),
     cupti's start line, and the trace's GPU tracks / flow arrows (trace=1);
 (b) launch latency: ns per launch of a tiny Triton kernel and a torch op,
     cupti=0 and cupti=1 alternating in fresh processes (best of rounds);
 (c) torch.profiler started after tunerguard took CUPTI: does the profiler
     still record CUDA kernels, and what tunerguard printed; with a control
     run without the preload.
Every child's stderr tail is included.  Exit status 0 unless the harness broke."""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.abspath(__file__)


# ---------------------------------------------------------------- children
def child_tune(hammer):
    import threading

    import torch
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=s)
               for (bm, bn, bk, w, s) in [(128, 128, 32, 4, 3), (64, 128, 32, 4, 4), (128, 64, 32, 4, 4),
                                          (64, 64, 32, 4, 4), (128, 128, 64, 8, 3), (32, 64, 32, 2, 5)]]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid = tl.program_id(0)
        npn = tl.cdiv(N, BN)
        rm = (pid // npn) * BM + tl.arange(0, BM)
        rn = (pid % npn) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptr + rm[:, None] * K + (rk[None, :] + k * BK), mask=(rm[:, None] < M), other=0.0)
            b = tl.load(b_ptr + (rk[:, None] + k * BK) * N + rn[None, :], mask=(rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    dev = torch.device("cuda:0")
    M = N = K = 2048
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    c = torch.empty(M, N, device=dev, dtype=torch.float16)
    compile("1", "tg", "eval")  # an audit event after CUDA init: cupti=1 starts here
    stop, running, iters = threading.Event(), threading.Event(), [0]

    def hammer_fn():
        s = torch.cuda.Stream(device=dev)
        x = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
        with torch.cuda.stream(s):
            while not stop.is_set():
                torch.matmul(x, x)
                s.synchronize()
                iters[0] += 1
                if iters[0] == 3:
                    running.set()

    h = None
    if hammer:
        h = threading.Thread(target=hammer_fn, name="hammer", daemon=True)
        h.start()
        running.wait(60)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    mm[grid](a, b, c, M, N, K)
    torch.cuda.synchronize()
    stop.set()
    if h:
        h.join(60)
    print(json.dumps({"best": str(mm.best_config), "hammer_iters": iters[0]}))


def child_latency():
    import time

    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def nop(x_ptr):
        pass

    x = torch.zeros(16, device="cuda")
    nop[(1,)](x)
    torch.cuda.synchronize()
    compile("1", "tg", "eval")

    def bench(f, n=20000, rounds=5):
        best = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            for _ in range(n):
                f()
            t1 = time.perf_counter_ns()
            torch.cuda.synchronize()
            best = min(best, (t1 - t0) / n)
        return best

    print(json.dumps({"triton_ns": bench(lambda: nop[(1,)](x)), "torch_add_ns": bench(lambda: x.add_(1))}))


def child_profiler():
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(1024, 1024, device="cuda")
    for _ in range(10):
        x = x @ x
        x = x / x.norm()
    torch.cuda.synchronize()
    compile("1", "tg", "eval")  # tunerguard (cupti=1) takes CUPTI here
    sys.stderr.write("CHILD: profiler starting\n")
    sys.stderr.flush()
    err = None
    n_cuda = 0
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                x = x @ x
                x = x / x.norm()
            torch.cuda.synchronize()
        evs = prof.events()
        n_cuda = sum(1 for e in evs if str(getattr(e, "device_type", "")).endswith("CUDA"))
        n_all = len(evs)
    except Exception as e:  # report, never hide
        err, n_all = repr(e), 0
    # tunerguard after the profiler: launches still work
    for _ in range(10):
        x = x @ x
    torch.cuda.synchronize()
    print(json.dumps({"profiler_events": n_all, "profiler_cuda_events": n_cuda, "error": err}))


# ---------------------------------------------------------------- parent
def run(args, what, opts, preload=True, extra=()):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = os.path.abspath(args.lib)
        env["TUNERGUARD_OPTIONS"] = opts
    p = subprocess.run([sys.executable, HERE, "--child", what, *extra], env=env, capture_output=True,
                       text=True, timeout=args.timeout)
    out = None
    for line in reversed(p.stdout.splitlines()):
        try:
            out = json.loads(line)
            break
        except ValueError:
            continue
    tg_lines = [l for l in p.stderr.splitlines() if l.startswith("tunerguard")]
    return {"options": opts if preload else None, "rc": p.returncode, "result": out,
            "tunerguard_stderr": tg_lines[-20:], "stderr_tail": p.stderr[-1500:] if p.returncode else ""}


def reports(prefix):
    recs = []
    for f in glob.glob(prefix + ".*.jsonl"):
        for line in open(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("kind") == "interference":
                i = r.get("interference", {})
                recs.append({"kernel": (r.get("tuner") or {}).get("kernel"), "device": i.get("device"),
                             "foreign_launches": i.get("foreign_launches"), "own_launches": i.get("own_launches"),
                             "gpu": i.get("gpu")})
            else:
                recs.append({"kind": r.get("kind")})
    return recs


def trace_summary(prefix):
    fs = glob.glob(prefix + ".*.trace.json")
    if not fs:
        return None
    try:
        ev = json.load(open(fs[0]))
    except ValueError as e:
        return {"file": fs[0], "error": repr(e)}
    gpu = [e for e in ev if e.get("cat") == "gpu" and e.get("ph") == "X" and e.get("pid", 0) >= 1000000000]
    return {"file": fs[0], "events": len(ev), "gpu_kernels": len(gpu),
            "gpu_tracks": sorted({f"{e['pid'] - 1000000000}/{e['tid']}" for e in gpu})[:16],
            "flow_starts": sum(1 for e in ev if e.get("ph") == "s" and e.get("cat") == "gpu"),
            "flow_ends": sum(1 for e in ev if e.get("ph") == "f" and e.get("cat") == "gpu"),
            "launch_slices_with_thread": sum(1 for e in ev if e.get("cat") == "gpu" and e.get("name") == "launch"
                                             and e.get("ph") == "X")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build/libtunerguard.so")
    ap.add_argument("--out", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--hammer", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "tune":
        return child_tune(args.hammer)
    if args.child == "latency":
        return child_latency()
    if args.child == "profiler":
        return child_profiler()
    out = args.out or tempfile.mkdtemp(prefix="tg_cupti_")
    os.makedirs(out, exist_ok=True)
    doc = {"lib": os.path.abspath(args.lib), "out": out}
    # (a) interference
    a = {}
    for name, hammer, opts in [("loaded_cupti1", True, "cupti=1:trace=1:verbosity=1"),
                               ("alone_cupti1", False, "cupti=1:verbosity=1"),
                               ("loaded_cupti0", True, "cupti=0")]:
        prefix = os.path.join(out, name)
        r = run(args, "tune", f"{opts}:log_path={prefix}", extra=["--hammer"] if hammer else [])
        r["reports"] = reports(prefix)
        r["trace"] = trace_summary(prefix)
        a[name] = r
    doc["a_interference"] = a
    # (b) latency, alternating
    lat = {"cupti0": [], "cupti1": []}
    b_runs = []
    for i in range(args.rounds):
        for k, opts in (("cupti0", "cupti=0"), ("cupti1", "cupti=1:verbosity=1")):
            r = run(args, "latency", f"{opts}:log_path={os.path.join(out, 'lat')}")
            b_runs.append({"variant": k, "rc": r["rc"], "tunerguard_stderr": r["tunerguard_stderr"][-3:],
                           "stderr_tail": r["stderr_tail"]})
            if r["result"]:
                lat[k].append(r["result"])
    summ = {}
    for k, v in lat.items():
        for f in ("triton_ns", "torch_add_ns"):
            xs = [x[f] for x in v if f in x]
            summ[f"{k}_{f}_median"] = statistics.median(xs) if xs else None
            summ[f"{k}_{f}_all"] = xs
    for f in ("triton_ns", "torch_add_ns"):
        a0, a1 = summ.get(f"cupti0_{f}_median"), summ.get(f"cupti1_{f}_median")
        summ[f"delta_{f}"] = (a1 - a0) if a0 and a1 else None
    doc["b_latency"] = {"summary": summ, "runs": b_runs}
    # (c) torch.profiler after tunerguard took CUPTI
    doc["c_profiler"] = {
        "with_tunerguard_cupti1": run(args, "profiler", f"cupti=1:verbosity=1:log_path={os.path.join(out, 'prof')}"),
        "with_tunerguard_cupti0": run(args, "profiler", f"cupti=0:log_path={os.path.join(out, 'prof0')}"),
        "without_preload": run(args, "profiler", "", preload=False),
    }
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main() or 0)
