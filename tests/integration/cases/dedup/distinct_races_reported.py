# dedup/distinct_races_reported.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
def other_kernel(*a): return 1
race_once(Autotuner(my_kernel))
race_once(Autotuner(other_kernel))
print("DONE")
