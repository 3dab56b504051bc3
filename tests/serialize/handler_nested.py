"""serialize: a SIGALRM handler calls a kernel whose tuner the main thread
is inside already, while the main thread, from inside it, waits for another
kernel's tuner.  The handler's call is a nested level on the main thread
(depth), neither a wait nor a race.

The main thread calls kernel 'outer', whose body calls kernel 'inner',
which thread A is inside: the main thread waits for 'inner'.  At that
wait's event (the tunerguard.serialize_wait audit hook) a one-shot timer is
armed (the main thread's wait for the turn, before it entered 'outer', arms
nothing); the SIGALRM handler calls 'outer' again.  A stays inside 'inner'
until the handler's call has returned, or blocked in tunerguard (a wait
event while the handler runs: a wait for a tuner its own thread is inside).
Exit 0 when the handler's call returned without a wait while A was inside,
then A's call and the main thread's; 1 otherwise.  Every wait bounded."""
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
outer, inner = Tuner("outer"), Tuner("inner")
inside, release, handler_in = threading.Event(), threading.Event(), threading.Event()
order, armed, waited, in_outer = [], [], [], []


def audit(event, args):
    if event != "tunerguard.serialize_wait" or threading.current_thread() is not threading.main_thread():
        return
    if handler_in.is_set():
        waited.append(1)  # the handler's call waits: let A go, or it waits for good
        release.set()
    elif in_outer and not armed:  # the wait for 'inner' (the turn's for 'outer' comes first)
        armed.append(1)
        signal.setitimer(signal.ITIMER_REAL, 0.001)


# Each call records itself inside its tuner, where serialize orders the
# calls: once A leaves 'inner', the main thread's call runs, and without the
# GIL it may record itself before A gets back from inner.run.
def handler(signum, frame):
    handler_in.set()
    try:
        outer.run(lambda: order.append("handler"))
    finally:
        release.set()


signal.signal(signal.SIGALRM, handler)
sys.addaudithook(audit)


def a_body():
    inside.set()
    if not release.wait(T):
        print("handler_nested: the handler's call neither returned nor waited")
        os._exit(1)
    order.append("A")


a = threading.Thread(target=lambda: inner.run(a_body), name="A")
a.start()
if not inside.wait(T):
    sys.exit(1)
outer.run(lambda: in_outer.append(1) or inner.run(lambda: order.append("main")))
a.join(T)
print(f"handler_nested: calls ran in the order {order}; the handler's call waited: {bool(waited)}")
sys.exit(0 if order == ["handler", "A", "main"] and not waited else 1)
