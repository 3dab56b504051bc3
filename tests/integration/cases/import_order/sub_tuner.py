# import_order/sub_tuner.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
class CachedAutotuner(Autotuner):
    def run(self, *args, **kwargs):
        return super().run(*args, **kwargs)
assert is_guarded(CachedAutotuner), "subclass override not guarded"
tuner = CachedAutotuner(my_kernel)
