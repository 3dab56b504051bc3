# import_order/import_importlib.py: run after the prelude in tests/integration/harness.py
import importlib
A = importlib.import_module("triton.runtime.autotuner")
assert is_guarded(A.Autotuner)
race_once(A.Autotuner(my_kernel))
print("DONE")
