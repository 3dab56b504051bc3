# race/raising_name_tuner.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
class Tuner(Autotuner):
    @property
    def base_fn(self):
        if threading.current_thread() is threading.main_thread() and fire_now():
            raise KeyboardInterrupt
        return self._base_fn
    @base_fn.setter
    def base_fn(self, fn):
        self._base_fn = fn
def make_tuner(hook):
    return Tuner(my_kernel, hook)
