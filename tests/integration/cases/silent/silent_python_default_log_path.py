# silent/silent_python_default_log_path.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
Autotuner(my_kernel).run(1)
print("ran")
