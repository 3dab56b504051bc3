# race/very_deep.py: run after the prelude in tests/integration/harness.py
# The victim, 400 frames deep, waits inside the tuner blocked in a CUDA call
# (the stand-in libcuda's gate parks its cuCtxSynchronize; ctypes.CDLL
# detaches the thread state around it): a thread whose stack the report can
# read with the GIL off too (docs/free-threading.md, "The parked read").
import ctypes
from triton.runtime.autotuner import Autotuner
cuda = ctypes.CDLL("libcuda.so.1")
cuda.fakecuda_gate_wait_parked.argtypes = [ctypes.c_double]
assert cuda.cuInit(0) == 0
sys.setrecursionlimit(5000)
tuner = Autotuner(my_kernel)
def hook(t, tag, *rest):
    if tag == "victim":
        cuda.cuCtxSynchronize()  # parks in the gate until the main thread opens it
tuner.hook = hook
def descend(n):
    return descend(n - 1) if n else tuner.run("victim")
assert cuda.fakecuda_gate_arm() == 0
th = threading.Thread(target=descend, args=(400,), name="victim")
th.start()
assert cuda.fakecuda_gate_wait_parked(20.0) == 1, "the victim never reached cuCtxSynchronize"
tuner.run("other")
cuda.fakecuda_gate_open()
th.join()
print("DONE")
