# import_order/import_leaves_loader_as_it_was.py: run after the prelude in tests/integration/harness.py
import triton.runtime.autotuner as A
loader = A.__loader__
print("OWN", "exec_module" in vars(loader))
print("GUARDED", is_guarded(A.Autotuner))
