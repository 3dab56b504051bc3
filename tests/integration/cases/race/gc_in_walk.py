# race/gc_in_walk.py: run after the prelude in tests/integration/harness.py
import gc
from triton.runtime.autotuner import Autotuner
parked = threading.Event()
go = threading.Event()
moved = threading.Event()
release = threading.Event()
fired = []
def park_deep(n):
    if n:
        return park_deep(n - 1)
    parked.set()
    go.wait(20)
    return n
def moved_on(a, b, c):
    moved.set()
    release.wait(20)
    return a
def hook(t, tag, *rest):
    if tag == "A":
        park_deep(DEPTH)  # frames no one has read yet: no frame objects (3.11+)
        moved_on(1, 2, 3)  # new frames where those were
class Trap:
    # Collected in the main thread's next collection: lets A leave its frames
    # and waits until it has, the GIL released meanwhile.
    def __del__(self):
        fired.append(threading.current_thread().name)
        go.set()
        moved.wait(20)
tuner = Autotuner(my_kernel)
tuner.hook = hook
a = threading.Thread(target=tuner.run, args=("A",), name="A")
a.start()
assert parked.wait(20)
f = sys._getframe()  # the main thread's own frames made now, not by the report
while f:
    f = f.f_back
gc.collect()
old = gc.get_threshold()
gc.set_threshold(1)  # a collection at the second object the collector tracks from here
t = Trap()
t.me = t
del t
tuner.run("C")  # the race report reads A's frames: 3.11 makes their objects, each an allocation
gc.set_threshold(*old)
gc.collect()
release.set()
a.join()
gil = getattr(sys, "_is_gil_enabled", lambda: True)()
print("FIRED", ",".join(fired), "GIL", int(gil))
print("DONE")
