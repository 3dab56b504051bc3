#!/usr/bin/env python3
"""flash-linear-attention's CachedAutotuner as released: fla/ops/utils/cache.py of
fla-core 0.6.0, read from the wheel named by TG_FLA_WHEEL (tools/dev fetches it into
the wheel cache; tests/repro/run_wheel_repro.py skips when it is absent) and run as it
is, over the model's Triton Autotuner.  Stand-ins only for what the module imports
and this test never reaches: `torch` (get_gpu_info, not called: FLA_CONFIG_DIR is
set) and, where it is not installed, `packaging.version` (a release-number parse of
triton.__version__).

FLA_CACHE_MODE=strict with a config file (the shape fla/configs/<GPU>/<kernel>.json
has: autotune_entries keyed by the md5 of the key) holding the best config for D=16
only.  Called like FLA's l2norm_fwd: keyword arguments only, restore_value=["y"], so
FLA's own None-safe _pre_hook/_post_hook are installed (they keep self.restore_copies
on the shared object).

Forced overlap: thread 'tuner' calls with D=8 (no entry in the file): CachedAutotuner
.run finds nothing, Autotuner.run tunes, and the first benchmark synchronize parks it
with self.nargs = {}.  Threads 'from-file-1..3' call with D=16: maybe_load_cached_config
writes self.cache[key] from the file, so Autotuner.run takes its fast path, and
each one's self.nargs = None lands under the tuner.  The tuner resumes and its next
_bench raises TypeError: 'NoneType' object is not a mapping.

Correct result: every y is x / ||x||, and the D=16 key holds the file's config.
"""
import atexit
import importlib
import json
import math
import os
import re
import shutil
import sys
import tempfile
import types
import zipfile

import _harness

h = _harness.Harness("fla_cached_autotuner", __doc__)

import triton  # noqa: E402  (the model, from tests/repro/model)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

MODULE = "fla/ops/utils/cache.py"


def stand_ins():
    """Modules cache.py imports that are not here: torch (never reached), packaging."""
    torch = types.ModuleType("torch")
    torch.__doc__ = "stand-in: fla/ops/utils/cache.py imports torch; this test reaches none of it"
    sys.modules.setdefault("torch", torch)
    try:
        importlib.import_module("packaging.version")
    except ImportError:
        packaging = types.ModuleType("packaging")
        version = types.ModuleType("packaging.version")

        def parse(text):  # the release numbers: all cache.py compares
            return tuple(int(p) for p in re.match(r"\d+(?:\.\d+)*", text).group(0).split("."))

        version.parse = parse
        packaging.version = version
        sys.modules["packaging"], sys.modules["packaging.version"] = packaging, version


def load_fla_cache(wheel):
    """Run the wheel's fla/ops/utils/cache.py as module fla.ops.utils.cache."""
    with zipfile.ZipFile(wheel) as z:
        source = z.read(MODULE).decode()
    stand_ins()
    mod = types.ModuleType("fla.ops.utils.cache")
    mod.__file__ = f"{wheel}/{MODULE}"
    sys.modules[mod.__name__] = mod
    exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    return mod


wheel = os.environ.get("TG_FLA_WHEEL", "")
if sys.version_info < (3, 10):  # cache.py evaluates `X | None` annotations when it runs
    h.harness_error(f"fla-core 0.6.0 needs Python 3.10 or later, this is {sys.version.split()[0]}")
if not os.path.isfile(wheel):
    h.harness_error(f"TG_FLA_WHEEL={wheel!r} is not a file (the fla-core 0.6.0 wheel)")
config_dir = tempfile.mkdtemp(prefix="fla-configs-")
atexit.register(shutil.rmtree, config_dir, ignore_errors=True)  # whatever the exit status
os.environ.update(FLA_CACHE_MODE="strict", FLA_CONFIG_DIR=config_dir)  # read when cache.py is run
fla = load_fla_cache(wheel)


@fla.fla_cache_autotune(
    configs=[triton.Config({"BD": bd}, num_warps=w) for bd in (8, 16, 32) for w in (1, 2, 4)],
    key=["D"],
    restore_value=["y"],
)
@triton.jit
def fla_l2norm_kernel(x, y, eps, D, BD: tl.constexpr):
    norm = math.sqrt(sum(v * v for v in x.data[:D]) + eps)
    for i in range(D):
        y.data[i] = x.data[i] / norm


EPS = 1e-6
FILE_CONFIG = {"kwargs": {"BD": 16}, "num_warps": 2, "num_stages": 1, "num_ctas": 1}


def write_config_file():
    """The D=16 entry, keyed as FLA keys it (AutotuneKey.build, key_hash)."""
    sample = {"x": Tensor.zeros(16), "y": Tensor.zeros(16), "eps": EPS, "D": 16}
    key = fla.AutotuneKey.build(fla_l2norm_kernel.arg_names, fla_l2norm_kernel.keys, (), sample)
    entry = {"autotune_key": list(key.autotune_key), "config": FILE_CONFIG}
    with open(os.path.join(config_dir, "fla_l2norm_kernel.json"), "w") as f:
        json.dump({"kernel_name": "fla_l2norm_kernel", "autotune_entries": {fla.AutotuneKey.key_hash(key.autotune_key): entry}}, f)


def make_body(i, d):
    x = Tensor([float(i + 1 + j) for j in range(d)], name=f"x{i}")
    y = Tensor.zeros(d, name=f"y{i}")

    def body():
        h.call(lambda: fla_l2norm_kernel[(1,)](x=x, y=y, eps=EPS, D=d))  # keywords only, as l2norm_fwd
        return x, y

    return body


write_config_file()
workers = [h.worker("tuner", make_body(0, 8))]
workers += [h.worker(f"from-file-{i}", make_body(i, 16)) for i in range(1, 4)]
h.overlap(workers)
for w in workers:
    x, y = w.result
    norm = math.sqrt(sum(v * v for v in x.data) + EPS)
    want = [v / norm for v in x.data]
    if any(abs(a - b) > 1e-12 for a, b in zip(y.data, want)):
        h.fail(f"{w.name}: y = {y.data}, expected {want}")
from_file = [c for k, c in fla_l2norm_kernel.cache.items() if k[0] == 16]
if len(from_file) != 1 or from_file[0].kwargs != FILE_CONFIG["kwargs"] or from_file[0].num_warps != 2:
    h.fail(f"the D=16 key holds {from_file}, not the config file's {FILE_CONFIG}")
h.passed("the tuner and 3 calls served from FLA's config file through fla-core 0.6.0's CachedAutotuner")
