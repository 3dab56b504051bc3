# replace/replaced_method_patch_restore_loop.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
orig = Autotuner.run
tuner = Autotuner(my_kernel)
guarded, wrong, held = 0, [], None
for i in range(300):
    def patched(self, *a, i=i, **k):  # a new function each time
        orig(self, *a, **k)
        return ("patched", i)
    Autotuner.run = patched
    if tuner.run(i) != ("patched", i):
        wrong.append(i)
    guarded += is_guarded(Autotuner)
    if i == 0:
        held = tuner.run  # a bound method of the first replacement's guard
    Autotuner.run = orig
print("GUARDED", guarded, "WRONG", wrong, "HELD", held(0))
print("MINOR", sys.version_info[1])
def last(self, *a, **k):
    return orig(self, *a, **k)
Autotuner.run = last
race_once(tuner)
print("DONE")
