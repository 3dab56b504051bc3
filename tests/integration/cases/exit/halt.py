# exit/halt.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
tuner = Autotuner(my_kernel)
print("BEFORE", flush=True)
race_once(tuner)
print("AFTER", flush=True)
