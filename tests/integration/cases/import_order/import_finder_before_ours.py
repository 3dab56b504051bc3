# import_order/import_finder_before_ours.py: run after the prelude in tests/integration/harness.py
import importlib.abc, importlib.machinery
how = HOW
snapshot = list(sys.meta_path)
import triton  # the package: our finder goes in
if how == "front":
    class Hook(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.startswith("triton."):
                return importlib.machinery.PathFinder.find_spec(name, path)
    sys.meta_path.insert(0, Hook())
else:
    sys.meta_path[:] = snapshot
import triton.runtime.autotuner as A
open(os.devnull).close()  # an audit event ("open")
race_once(A.Autotuner(my_kernel))
print("GUARDED", is_guarded(A.Autotuner))
