"""Model of the one triton._C.libtriton function the autotuner imports."""
import os

# A few of the names upstream's C++ list holds (CACHE_INVALIDATING_ENV_VARS).
_INVALIDATING = ("TRITON_DEFAULT_FP_FUSION", "TRITON_DISABLE_LINE_INFO", "TRITON_OVERRIDE_ARCH",
                 "TRITON_LLVM_DEBUG_ONLY", "USE_IR_LOC")


def get_cache_invalidating_env_vars():
    return {k: os.environ[k] for k in _INVALIDATING if k in os.environ}
