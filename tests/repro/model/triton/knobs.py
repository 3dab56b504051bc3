# Model of triton/knobs.py: only the knobs autotuner.py reads, with Triton's defaults
# (TRITON_PRINT_AUTOTUNING=0, TRITON_CACHE_AUTOTUNING=0, TRITON_INTERPRET=0).
import os

from . import _model


class _Knobs:
    pass


autotuning = _Knobs()
autotuning.print = os.environ.get("TRITON_PRINT_AUTOTUNING", "0") == "1"
autotuning.cache = os.environ.get("TRITON_CACHE_AUTOTUNING", "0") == "1"  # the disk cache (check_disk_cache)
if _model.TAG in ("main", "unknown"):
    # main only (#10125): called after each tuning decision; 3.4-3.7 have no such knob.
    autotuning.listener = None

runtime = _Knobs()
runtime.interpret = False
