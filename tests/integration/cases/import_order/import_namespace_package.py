# import_order/import_namespace_package.py: run after the prelude in tests/integration/harness.py
import importlib, shutil
src = os.path.join(sys.path.pop(0), "triton", "runtime", "autotuner.py")  # the fixture: a regular package
os.makedirs("ns/triton/runtime")
shutil.copy(src, "ns/triton/runtime/autotuner.py")
sys.path.insert(0, os.path.abspath("ns"))
A = importlib.import_module("triton.runtime.autotuner")
print("NAMESPACE", type(sys.modules["triton"].__spec__.loader).__name__)
open(os.devnull).close()  # an audit event ("open")
race_once(A.Autotuner(my_kernel))
print("GUARDED", is_guarded(A.Autotuner))
