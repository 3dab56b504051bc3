# Model of triton/knobs.py: only the knobs autotuner.py reads, with Triton's defaults
# (TRITON_PRINT_AUTOTUNING=0, TRITON_CACHE_AUTOTUNING=0, TRITON_INTERPRET=0).
import os


class _Knobs:
    pass


autotuning = _Knobs()
autotuning.print = os.environ.get("TRITON_PRINT_AUTOTUNING", "0") == "1"
autotuning.cache = False  # the on-disk autotune cache is not modelled (see Autotuner.check_disk_cache)

runtime = _Knobs()
runtime.interpret = False
