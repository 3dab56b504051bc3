"""Evidence an entering thread learns of only through the holder's evidence
bits, on a marked tuner (a subclass of Triton's Autotuner: no frame walk, and
at verbosity 0 no record read unless a bit is set).  Thread A is inside and
parked; the main thread enters the same instance.  argv[1]:
  launch2  A's session launched twice (a config's pre_hook, say), no _bench:
           the CUDA hook's bit; a high-severity race
  launch1  one launch: a tuned call's fast path; an overlap, not reported
           (without the GIL a race: the calls run at once)
  sync     A's session synchronized once: the CUDA hook's bit; high
  warmup   A is inside the tuner's warmup (compiling, no _bench): the bit of
           the warmup's entry; high
Needs the stand-in libcuda (LD_LIBRARY_PATH); every wait is bounded."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration", "fixtures"))
from triton.runtime.autotuner import Autotuner  # noqa: E402

T = 20.0
how = sys.argv[1]
cuda = ctypes.CDLL("libcuda.so.1")  # CDLL: the GIL is released around each call
assert cuda.cuInit(0) == 0
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
parked, release = threading.Event(), threading.Event()


class Tuner(Autotuner):
    def run(self, tag):
        self.nargs = {0: tag}
        try:
            if tag == "A":
                for _ in range({"launch2": 2, "launch1": 1}.get(how, 0)):
                    assert cuda.cuLaunchKernel(None, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0
                if how == "sync":
                    assert cuda.cuCtxSynchronize() == 0
                parked.set()
                release.wait(T)
            return tag
        finally:
            self.nargs = None

    def warmup(self, tag):
        self.nargs = {0: tag}
        try:
            parked.set()
            release.wait(T)  # compiling
            return "compiled"
        finally:
            self.nargs = None


tuner = Tuner(lambda *a, **k: "ok")
a = threading.Thread(target=(tuner.warmup if how == "warmup" else tuner.run), args=("A",), name="A")
a.start()
assert parked.wait(T), "A never got inside"
r = tuner.run("C")
release.set()
a.join(T)
print("result", r, "A done", not a.is_alive())
sys.exit(0 if r == "C" and not a.is_alive() else 1)
