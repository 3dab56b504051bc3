# dedup/new_tuner_every_call_is_one_bug.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
keep = []
def step():
    tuner = Autotuner(my_kernel)
    keep.append(tuner)
    race_once(tuner)
for i in range(30):
    step()
print("DONE")
