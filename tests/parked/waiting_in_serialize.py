"""serialize: thread A is inside tuner X's benchmark and waits there in
tunerguard's own wait for tuner Y, which thread C holds; the main thread
enters X.  Its report (a race the wait prevents) shows A's Python stack down
to the function that called Y: A is held in its wait (a parking point), not
running.  tunerguard's "tunerguard.serialize_wait" audit event tells when
each thread is about to wait; every wait is bounded."""
import sys
import threading

sys.path.insert(0, sys.argv[1])  # the integration tests' model of Triton
from triton.runtime.autotuner import Autotuner  # noqa: E402

T = 20.0
a_waits = threading.Event()
c_inside = threading.Event()
c_release = threading.Event()


def audit(event, args):
    if event == "tunerguard.serialize_wait":
        name = threading.current_thread().name
        if name == "A":
            a_waits.set()
        elif name == "MainThread":
            c_release.set()  # the main thread waits for X now: let C leave Y, then A leaves X


sys.addaudithook(audit)


def kernel_x(*args, **kwargs):
    return "x"


def kernel_y(*args, **kwargs):
    return "y"


def calls_y(tuner, tag):  # X's hook, called from X's Autotuner._bench
    if tag == "A":
        y.run("A")  # waits: C holds Y


def holds_y(tuner, tag):  # Y's hook
    if tag == "C":
        c_inside.set()
        c_release.wait(T)


x = Autotuner(kernel_x, calls_y)
y = Autotuner(kernel_y, holds_y)
c = threading.Thread(target=lambda: y.run("C"), name="C")
c.start()
assert c_inside.wait(T), "C never entered Y"


def thread_a_caller():
    x.run("A")


a = threading.Thread(target=thread_a_caller, name="A")
a.start()
assert a_waits.wait(T), "A never waited for Y"
r = x.run("B")
a.join(T)
c.join(T)
gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
print("DONE", r, "A done", not a.is_alive(), "C done", not c.is_alive(), "GIL", gil)
