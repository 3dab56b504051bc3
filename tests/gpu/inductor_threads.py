#!/usr/bin/env python3
"""Real PyTorch Inductor from threads: one function compiled with
torch.compile(mode="max-autotune-no-cudagraphs"), so its generated Triton
kernels are CachingAutotuner objects with several configs each, first
called by two threads at once (a barrier), each on its own stream, with
empty Inductor and Triton caches (set TORCHINDUCTOR_CACHE_DIR and
TRITON_CACHE_DIR to fresh folders).  Dynamo compiles under its own lock;
the kernels autotune at their first launch, in CachingAutotuner.run, where
both threads can be at once.

    python3 tests/gpu/inductor_threads.py [--threads 2] [--rounds 3]

Exit 0 when every call finished and matched the eager result; 1 when a
call raised or a result differed; 2 no GPU."""
import argparse
import sys
import threading
import traceback

import torch

if not torch.cuda.is_available():
    print("inductor_threads: no CUDA device", file=sys.stderr)
    sys.exit(2)


def model(x, w):
    h = torch.softmax((x @ w) * 0.5, dim=-1)
    return (h * x.sum(-1, keepdim=True)).relu().mean(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
    failed = 0
    for rnd in range(a.rounds):
        n = 512 + 64 * rnd  # a new shape each round: new kernels to tune
        inputs = [(torch.randn(n, 256, device="cuda"), torch.randn(256, 256, device="cuda"))
                  for _ in range(a.threads)]
        want = [model(x, w) for x, w in inputs]
        torch.cuda.synchronize()
        start = threading.Barrier(a.threads)
        got, errors = [None] * a.threads, []

        def call(i):
            s = torch.cuda.Stream()
            start.wait()
            try:
                with torch.cuda.stream(s):
                    got[i] = compiled(*inputs[i])
                s.synchronize()
            except Exception as e:
                errors.append(e)
                print(f"inductor_threads: round {rnd} thread {i} raised:", file=sys.stderr)
                traceback.print_exc()

        ts = [threading.Thread(target=call, args=(i,), name=f"worker-{i}") for i in range(a.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        failed += len(errors)
        for i in range(a.threads):
            if got[i] is not None and not torch.allclose(got[i], want[i], rtol=1e-2, atol=1e-2):
                failed += 1
                print(f"inductor_threads: round {rnd} thread {i}: result differs from eager "
                      f"(max abs diff {(got[i] - want[i]).abs().max().item():.3g})", file=sys.stderr)
    print(f"inductor_threads: {a.rounds * a.threads - failed} of {a.rounds * a.threads} calls correct",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
