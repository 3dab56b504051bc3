# import_order/import_module_run_again.py: run after the prelude in tests/integration/harness.py
import importlib, sys
A = importlib.import_module("triton.runtime.autotuner")
Old = A.Autotuner
B = HOW
assert B.Autotuner is not Old, "the module did not run again"
class Sub(B.Autotuner):
    def run(self, *a, **k):
        return super().run(*a, **k)
print("GUARDED", is_guarded(Old), is_guarded(B.Autotuner), is_guarded(Sub))
race_once(Sub(my_kernel))
print("DONE")
