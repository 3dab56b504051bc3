# dedup/distinct_call_sites_reported.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
tuner = Autotuner(my_kernel)
def site_a(): return tuner.run("other")
def site_b(): return tuner.run("other")
for enter in (site_a, site_b, site_a):
    race_once(tuner, enter=enter)
print("DONE")
