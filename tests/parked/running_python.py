"""Thread A is inside a tuner's benchmark running Python code (a loop, never
in a CUDA call nor in a wait of tunerguard's); the main thread enters the
same tuner.  Without the GIL, A's stack cannot be read while it runs: the
report shows where A entered the tuner, and says so, within the bound.  With
the GIL, the main thread holds it while it reads, and A's whole stack is
shown.  Every wait is bounded."""
import os
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])  # the integration tests' model of Triton
from triton.runtime.autotuner import Autotuner  # noqa: E402

T = 20.0
started = threading.Event()
stop = []


def my_kernel(*args, **kwargs):
    return "ok"


def spin_in_python(tuner, tag):  # the hook, called from Autotuner._bench
    if tag == "A":
        started.set()
        end = time.monotonic() + T
        while not stop and time.monotonic() < end:
            pass


def thread_a_caller():
    tuner.run("A")


tuner = Autotuner(my_kernel, spin_in_python)
a = threading.Thread(target=thread_a_caller, name="A")
a.start()
assert started.wait(T), "A never started"
t0 = time.monotonic()
r = tuner.run("B")
entered_s = time.monotonic() - t0
stop.append(1)
a.join(T)
gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
print("DONE", r, "A done", not a.is_alive(), "GIL", gil, "entered in %.3f s" % entered_s)
