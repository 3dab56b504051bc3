"""Makes `import triton` find the Triton a scenario runs against; import it first.

TG_TRITON_RELEASE=1 (run_repro.py --triton-release): the release installed for this
interpreter, imported here with the stand-in kernel, driver and do_bench put in
(standin/triton_standin.py); model/ goes at the end of sys.path, for repro_tensor only.
Otherwise the model in model/ (TG_TRITON_MODEL), first on sys.path.  Never via PYTHONPATH.
"""
import os
import sys

REPRO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.environ.get("TG_TRITON_RELEASE") == "1"

if RELEASE:
    sys.path.insert(0, os.path.join(REPRO_DIR, "standin"))
    import triton_standin  # noqa: E402

    triton_standin.install()
    sys.path.append(os.path.join(REPRO_DIR, "model"))
else:
    sys.path.insert(0, os.path.join(REPRO_DIR, "model"))
