#!/usr/bin/env python3
"""A race on a real program's stack depth: the thread inside the tuner is
DEPTH frames deep in the program (a recursion of the program's own function)
and, while it benchmarks, inside a chain of imports about 60 frames of
importlib deep (the first launch's config pre_hook imports a generated
package whose modules import each other, LEVELS deep, in a temp folder; the
innermost module body synchronizes: that is where the gate parks it).

Forced overlap as hammer.py: the victim tunes, parks in the gate inside the
import chain; the other thread calls the same kernel from its own line and
enters the tuner while the victim is inside.  Under detect mode the race
report must name both threads' call sites and the victim's Autotuner.run
(tests/integration checks its length and contents on every interpreter).
"""
import atexit
import os
import shutil
import sys
import tempfile
import threading

import _harness

h = _harness.Harness("deep_stack", __doc__)

import triton  # noqa: E402  (the model, from tests/repro/model)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

DEPTH, LEVELS = 60, 12
PKG = "tg_deep_pkg"


def make_package():
    """PKG.m0 imports PKG.m1 ... imports PKG.m<LEVELS-1>, whose body synchronizes.
    The folder is removed when the program exits, whatever its status."""
    root = tempfile.mkdtemp(prefix="tg-deep-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    pkg = os.path.join(root, PKG)
    os.mkdir(pkg)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    for i in range(LEVELS):
        with open(os.path.join(pkg, f"m{i}.py"), "w") as f:
            if i + 1 < LEVELS:
                f.write(f"import {PKG}.m{i + 1}\n")
            else:
                f.write("from triton.runtime import driver\ndriver.active.get_device_interface().synchronize()\n")
    sys.path.insert(0, root)


def first_launch_imports(nargs):
    if threading.current_thread().name == "victim":  # the other thread would wait on the import's lock
        __import__(f"{PKG}.m0")


make_package()


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=4, pre_hook=first_launch_imports) for b in (16, 32)],
    key=["n"],
)
@triton.jit
def deep_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = 2.0 * x.data[i]


def tensors(name, n=16):
    return Tensor([float(j) for j in range(n)], name=f"x_{name}"), Tensor.zeros(n, name=f"y_{name}")


def victim_step():
    x, y = tensors("victim")
    h.call(lambda: deep_kernel[(1,)](x, y, 16))  # the victim's call site
    return x, y


def descend(n):
    return descend(n - 1) if n else victim_step()


def victim():
    return [descend(DEPTH)]


def other():
    x, y = tensors("other")
    h.call(lambda: deep_kernel[(1,)](x, y, 16))  # the entering thread's call site
    return [(x, y)]


t = h.worker("victim", victim)
o = h.worker("other", other)
h.start_victim(t)
h.start_and_settle([o])
h.open_gate()
h.join([t, o])
h.check_no_exceptions()
h.passed("both calls returned")
