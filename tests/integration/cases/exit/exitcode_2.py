# exit/exitcode_2.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
Autotuner(my_kernel).run(1)
sys.exit(5)
