#!/usr/bin/env python3
"""A real model on a real GPU: two copies of a small flash-linear-attention
GatedDeltaNet language model run forward at once from a ThreadPoolExecutor,
each on its own CUDA stream, as a training job that drives several model
copies from threads does.  Run it with an empty TRITON_CACHE_DIR (cold
caches): the first forward of each copy autotunes fla's kernels, and both
copies share one Autotuner per kernel.

    TRITON_CACHE_DIR=$(mktemp -d) python3 tests/gpu/fla_model.py [--layers 4] [--depth 40]

--depth wraps the forward in that many frames of the program's own code (a
training step's call chain), so a report must keep the program's frames on a
deep stack.  Exit 0 when both forwards finished and each copy's logits equal a
second, sequential forward of the same copy (tuned by then); 1 when a forward
raised (the race: TypeError 'NoneType' object is not a mapping, ...) or the
logits differ (silent corruption)."""
import argparse
import concurrent.futures as cf
import sys
import threading
import traceback

import torch
from fla.models import GatedDeltaNetConfig, GatedDeltaNetForCausalLM


def build(seed, layers):
    torch.manual_seed(seed)
    cfg = GatedDeltaNetConfig(hidden_size=256, num_hidden_layers=layers, num_heads=4, head_dim=64,
                              vocab_size=1024, fuse_cross_entropy=False)
    return GatedDeltaNetForCausalLM(cfg).to("cuda", dtype=torch.bfloat16).eval()


def forward(model, ids, stream):
    with torch.no_grad(), torch.cuda.stream(stream):
        logits = model(input_ids=ids).logits
    stream.synchronize()
    return logits.float()


def nested(depth, fn, *args):
    """The program's own call chain: depth frames of this file above fn."""
    if depth <= 0:
        return fn(*args)
    return nested(depth - 1, fn, *args)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--depth", type=int, default=40)
    ap.add_argument("--seq", type=int, default=512)
    a = ap.parse_args()

    models = [build(i, a.layers) for i in range(2)]
    streams = [torch.cuda.Stream() for _ in models]
    ids = [torch.randint(0, 1024, (2, a.seq), device="cuda", generator=None) for _ in models]
    torch.cuda.synchronize()
    start = threading.Barrier(len(models))

    def step(i):
        start.wait()
        return nested(a.depth, forward, models[i], ids[i], streams[i])

    failed = 0
    with cf.ThreadPoolExecutor(max_workers=len(models)) as ex:
        futs = [ex.submit(step, i) for i in range(len(models))]
        outs = []
        for i, f in enumerate(futs):
            try:
                outs.append(f.result())
            except Exception:
                failed += 1
                outs.append(None)
                print(f"fla_model: copy {i} raised:", file=sys.stderr)
                traceback.print_exc()
    for i, out in enumerate(outs):
        if out is None:
            continue
        again = forward(models[i], ids[i], streams[i])
        if not torch.allclose(out, again, rtol=1e-2, atol=1e-2):
            failed += 1
            print(f"fla_model: copy {i}: logits differ from a sequential forward "
                  f"(max abs diff {(out - again).abs().max().item():.3g})", file=sys.stderr)
    print(f"fla_model: {len(models) - failed} of {len(models)} copies correct", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
