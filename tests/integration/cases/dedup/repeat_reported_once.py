# dedup/repeat_reported_once.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
tuner = Autotuner(my_kernel)
for i in range(5):
    race_once(tuner)
print("DONE")
