# Model of triton/runtime/__init__.py (Triton 3.6): the same names, minus the
# remote-cache backends the reproducers never use.
from .autotuner import (Autotuner, Config, Heuristics, autotune, heuristics)
from .driver import driver
from .jit import JITFunction, KernelInterface
from .errors import OutOfResources, InterpreterError

__all__ = [
    "autotune",
    "Autotuner",
    "Config",
    "driver",
    "Heuristics",
    "heuristics",
    "InterpreterError",
    "JITFunction",
    "KernelInterface",
    "OutOfResources",
]
