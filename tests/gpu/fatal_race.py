#!/usr/bin/env python3
"""A race in a real Triton autotuner, then a crash inside the session that raced.

  LD_PRELOAD=LIB TUNERGUARD_OPTIONS=log_path=DIR/tg python tests/gpu/fatal_race.py [--device N] [--device2 M]

Thread 'holder' (on --device) tunes a kernel that spins for about a millisecond
a launch; its autotune pre_hook, which do_bench calls before every benchmark
launch, tells the main thread it is benchmarking.  Only then does thread
'crasher' (on --device2) call the same kernel: it enters the tuner the holder is
inside (tunerguard reports the race), tunes too, and its first pre_hook reads
address 0 (SIGSEGV) inside that session.  Ordered with an Event, no sleeps.

Expected under tunerguard: the process dies by SIGSEGV (status -11); DIR/tg.<pid>.txt
holds the race report, then the fatal block saying the crasher "was inside tuner
instance ... in a session that raced with thread 'holder' ...: race report #1";
DIR/tg.<pid>.jsonl holds a "race" and a "fatal" record whose race_seq is the race's
seq, and `tunerguard report DIR` names the kernel of the dying thread's tuner.
Exit status 2 for a set-up problem (no GPU, no Triton); 1 if it did not crash.
"""
import argparse
import ctypes
import sys
import threading

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # pragma: no cover - set-up
    print(f"fatal_race: set-up: {e}", file=sys.stderr)
    sys.exit(2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--device2", type=int, default=None)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("fatal_race: set-up: no CUDA device", file=sys.stderr)
        return 2
    dev2 = a.device if a.device2 is None else a.device2
    benchmarking = threading.Event()

    def pre_hook(nargs, reset_only=False):  # Triton 3.6 also calls it with reset_only=True
        name = threading.current_thread().name
        if name == "holder":
            benchmarking.set()
        elif name == "crasher":
            ctypes.string_at(0)  # SIGSEGV inside the crasher's own tuner session

    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (128, 256)], key=["n"], pre_hook=pre_hook)
    @triton.jit
    def fatal_spin(x_ptr, n, spin, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n)
        for _ in range(spin):
            v = v * 0.5 + 0.5  # only the time it takes matters
        tl.store(x_ptr + offs, v + 1, mask=offs < n)

    n = 1 << 16
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    # Both configs compiled on both devices first (another key), so the
    # holder's tuning is pure benchmarking and lasts.
    for j, d in enumerate(sorted({a.device, dev2})):
        with torch.cuda.device(d):
            fatal_spin[lambda m, k=1024 >> j: (triton.cdiv(k, m["BLOCK"]),)](torch.zeros(1024 >> j, device=f"cuda:{d}"),
                                                                         1024 >> j, 16)
        torch.cuda.synchronize(d)

    def run(d):
        with torch.cuda.device(d), torch.cuda.stream(torch.cuda.Stream()):
            fatal_spin[grid](torch.zeros(n, device=f"cuda:{d}"), n, 200_000)
            torch.cuda.synchronize(d)

    holder = threading.Thread(target=run, args=(a.device,), name="holder", daemon=True)
    holder.start()
    if not benchmarking.wait(120):
        print("fatal_race: FAIL: the holder never benchmarked", file=sys.stderr)
        return 1
    crasher = threading.Thread(target=run, args=(dev2,), name="crasher", daemon=True)
    crasher.start()
    crasher.join(120)
    print("fatal_race: FAIL: the crasher did not crash", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
