# replace/replaced_method.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
orig = Autotuner.run
def locked(self, *a, **k):
    return orig(self, *a, **k)
Autotuner.run = locked
tuner = Autotuner(my_kernel)
tuner.run("first")
print("GUARDED_AFTER", is_guarded(Autotuner))
race_once(tuner)
print("DONE")
