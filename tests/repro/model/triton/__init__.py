"""A CPU-only model of the parts of Triton 3.6 that tunerguard's reproducers need.

This is NOT Triton. It is a test fixture that keeps the module layout and the
line-level structure of Triton 3.6.0's Python autotuner so that:
  * tunerguard's built-in targets (triton.runtime.autotuner:Autotuner.run and
    .warmup) apply to it unchanged, and
  * the race on Autotuner.nargs happens for the same reasons, in the same
    statements, as on a GPU.
The "GPU" is the stand-in libcuda (build/tests/fakecuda/libcuda.so.1), reached
through ctypes, which releases the GIL around every driver call the way
Triton's C launcher and torch.cuda.synchronize() do.

Scenarios put tests/repro/model on sys.path themselves; nothing here is
installed.  TG_TRITON_MODEL=3.6|main picks the version of the Autotuner
(default 3.6; _model.py, docs/triton-versions.md); the releases themselves run
from their wheels in the tests (run_repro.py --triton-release).
"""
from . import _model
from .runtime import (
    autotune,
    Config,
    heuristics,
    JITFunction,
    KernelInterface,
    OutOfResources,
    InterpreterError,
)
from .runtime.jit import jit
from . import language
from . import testing

_v = _model.VERSIONS[_model.TAG]
__version__ = _v + (".tunerguard.model" if "+" in _v else "+tunerguard.model")  # PEP 440: one local part

__all__ = [
    "autotune",
    "Config",
    "heuristics",
    "jit",
    "JITFunction",
    "KernelInterface",
    "language",
    "OutOfResources",
    "InterpreterError",
    "testing",
]
