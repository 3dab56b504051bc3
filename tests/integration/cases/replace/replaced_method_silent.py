# replace/replaced_method_silent.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
orig = Autotuner.run
def locked(self, *a, **k):
    return orig(self, *a, **k)
Autotuner.run = locked
Autotuner(my_kernel).run("first")
print("GUARDED_AFTER", is_guarded(Autotuner))
