# replace/signature.py: run after the prelude in tests/integration/harness.py
import inspect
from triton.runtime.autotuner import Autotuner
print("GUARDED", is_guarded(Autotuner))
print("SIG", inspect.signature(Autotuner.run))
print("BOUND", inspect.signature(Autotuner(my_kernel).run))
