# import_order/import_pending_ends_once_guarded.py: run after the prelude in tests/integration/harness.py
import ctypes
import triton.runtime.autotuner as A
open(os.devnull).close()  # an audit event after the module ran
for _ in range(3):
    A.Autotuner(my_kernel).run("x")
lib = ctypes.CDLL(os.environ["LD_PRELOAD"], mode=os.RTLD_NOLOAD)
print("PENDING", ctypes.c_int.in_dll(lib, "tg_arm_pending").value)
print("GUARDED", is_guarded(A.Autotuner))
