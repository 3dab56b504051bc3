# dedup/report_cap.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
def kernel(name):
    def k(*a, **kw): return "ok"
    k.__name__ = k.__qualname__ = name
    return k
for i in range(5):
    race_once(Autotuner(kernel("kernel_%d" % i)))
print("DONE")
