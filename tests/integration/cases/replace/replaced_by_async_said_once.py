# replace/replaced_by_async_said_once.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
t = Autotuner(my_kernel)
orig = Autotuner.run
async def arun(self, *a):
    return orig(self, *a)
Autotuner.run = arun
for i in range(2000):
    orig(t, i)
print("DONE")
