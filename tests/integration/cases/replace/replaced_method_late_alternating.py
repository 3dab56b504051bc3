# replace/replaced_method_late_alternating.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
class Sub(Autotuner):
    def run(self, *a, **k):
        return super().run(*a, **k)
a, s = Autotuner(my_kernel), Sub(my_kernel)
for i in range(1100):
    a.run(i); s.run(i)
orig = Autotuner.run
def locked(self, *x, **k):
    return orig(self, *x, **k)
Autotuner.run = locked
for i in range(OFF):
    s.run(0)
for i in range(3000):  # a check is one call in 64 at random: missed in 3000 with p < 1e-20
    a.run(i); s.run(i)
print("DONE")
