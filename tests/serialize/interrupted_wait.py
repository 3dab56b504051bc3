"""serialize: a wait cut short by Ctrl-C is counted to its real end in the
exit line's total ("waited X s in total"), as a wait that ends with the
lock is.  The main thread waits for a tuner the holder is inside (where the
GIL is on, the turn's wait first, 0.1 s, then the tuner's); once it has waited 0.6 s,
counted from its first wait's audit event, SIGINT to the process ends the
wait with a KeyboardInterrupt.  Nobody else waits, so the exit line's total
is the main thread's waits.

Prints "waited at least S": the time from that audit event (after the wait
began) to the signal (before it ended), a lower bound of the real wait,
for the driver to compare with the exit line.  Ordered by events; every
wait bounded."""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
# the turn's wait comes first where the GIL is on only (guard/gil_state.h)
TURN = 0 if hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled() else 1
LONG = 0.6  # how long the main thread waits before the signal: well past the turn's 0.1 s
t = Tuner("interrupted_kernel")
inside, release = threading.Event(), threading.Event()
events = []  # monotonic times of the main thread's waits beginning (audit events)
events_cv = threading.Condition()


def audit(event, args):
    if event == "tunerguard.serialize_wait" and threading.current_thread() is threading.main_thread():
        with events_cv:
            events.append(time.monotonic())
            events_cv.notify_all()


sys.addaudithook(audit)
holder = threading.Thread(target=lambda: t.run(lambda: (inside.set(), release.wait(T))), name="holder")
holder.start()
assert inside.wait(T)
sent = []


def interrupter():
    with events_cv:
        if not events_cv.wait_for(lambda: len(events) >= 1 + TURN, T):  # in the tuner's wait
            print("interrupted_wait: the main thread never waited for the tuner")
            os._exit(1)
    threading.Event().wait(max(0.0, events[0] + LONG - time.monotonic()))  # the wait's length, measured below
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)


threading.Thread(target=interrupter, name="interrupter", daemon=True).start()
try:
    t.run(lambda: "main")
    got = "entered"
except KeyboardInterrupt:
    got = "KeyboardInterrupt"
still_inside = not release.is_set() and holder.is_alive()
release.set()
holder.join(T)
if got != "KeyboardInterrupt" or not still_inside or not sent:
    print(f"interrupted_wait: the wait ended with {got!r}, holder still inside: {still_inside}")
    sys.exit(1)
print(f"waited at least {sent[0] - events[0]:.3f}")
sys.exit(0)
