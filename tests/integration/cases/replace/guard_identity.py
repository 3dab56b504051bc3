# replace/guard_identity.py: run after the prelude in tests/integration/harness.py
import atexit, inspect
from unittest import mock
n_atexit = atexit._ncallbacks()
from triton.runtime.autotuner import Autotuner
import triton.runtime.autotuner as mod
print("GUARDED", is_guarded(Autotuner), is_guarded(Autotuner, "warmup"))
print("MINOR", sys.version_info[1])
def probe(name, fn):
    try:
        print(name, fn())
    except Exception as e:
        print(name, "ERROR", type(e).__name__, e)
probe("SRC", lambda: inspect.getsource(Autotuner.run).lstrip().startswith("def run(self, *args, **kwargs):"))
probe("CODE", lambda: Autotuner.run.__code__.co_name == "run" and Autotuner.run.__module__ == mod.__name__
      and Autotuner.run.__globals__ is vars(mod))
probe("ISFUNC", lambda: inspect.isfunction(Autotuner.run))
probe("FUNC", lambda: Autotuner(my_kernel).run.__func__ is Autotuner.run)
probe("SIG", lambda: str(inspect.signature(Autotuner.run)))
class Duck:
    run = Autotuner.run
    hook = None
    def _bench(self, *a, **k):
        return "duck"
probe("DUCK", lambda: Duck().run(1))
probe("MOCK", lambda: type(mock.MagicMock(spec=Autotuner).run(1)).__name__)
probe("VARS", lambda: "__init_subclass__" not in vars(Autotuner) and
      inspect.getattr_static(Autotuner, "__init_subclass__") is vars(object)["__init_subclass__"])
class Later(Autotuner):
    def run(self, *a, **k):
        return super().run(*a, **k)
probe("LATER", lambda: is_guarded(Later))
race_once(Autotuner(my_kernel))
print("ATEXIT", atexit._ncallbacks() - n_atexit)
print("DONE")
