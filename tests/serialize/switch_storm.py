"""Robustness under thread switches during report building: the thread
inside a tuner is released at the moment another thread enters, and the
interpreter switches threads every microsecond, so the holder often leaves
while the entering thread is still writing its report (thread names and
class names run Python code, which lets other threads run).  A report must
never read the occupant after that.  Not a forcing test: it asserts that 300
such overlaps complete without a crash or a hang (bounded waits)."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

sys.setswitchinterval(1e-6)
T = 20.0
a = Tuner("storm_kernel")
done = 0
for i in range(300):
    inside, go = threading.Event(), threading.Event()

    def holder():
        a.run(lambda: (inside.set(), go.wait(T)))

    h = threading.Thread(target=holder, name=f"holder-{i}")
    h.start()
    assert inside.wait(T)

    def enter():
        go.set()  # release the holder right as we enter
        a.run(lambda: None)

    e = threading.Thread(target=enter, name=f"enter-{i}")
    e.start()
    e.join(T)
    h.join(T)
    done += not (e.is_alive() or h.is_alive())
print("completed", done)
sys.exit(0 if done == 300 else 1)
