"""serialize: Ctrl-C while a signal handler's kernel call waits inside the
main thread's own wait ends both: the KeyboardInterrupt comes out of the
main thread's call, soon, and nothing is left held or queued.

Thread A is inside the tuner until the main thread has its exception.  The
main thread calls the same kernel and waits; at its first wait event (the
tunerguard.serialize_wait audit hook) a one-shot timer is armed, and the
SIGALRM handler calls the kernel, which waits too (a second wait event, while
the handler runs).  Then SIGINT goes to thread A (signal.pthread_kill), so
the main thread's look between the stretches of its wait is what finds it.
A handler's call that went in instead (unguarded) never waits, and clears
A's state under it.
Exit 0 when the main thread's call raised KeyboardInterrupt within 1 s of
the signal (the looks are 50 ms apart) while A was inside, A's call read its
own state, and the tuner is entered again after; 1 otherwise, with a line
saying what.  Ordered by events; every wait bounded."""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
t = Tuner("interrupted_handler_kernel")
inside, handler_waits, done = threading.Event(), threading.Event(), threading.Event()
handler_in = threading.Event()
armed, sent, a_result = [], [], []


def audit(event, args):
    if event != "tunerguard.serialize_wait" or threading.current_thread() is not threading.main_thread():
        return
    if handler_in.is_set():
        handler_waits.set()
    elif not armed:
        armed.append(1)
        signal.setitimer(signal.ITIMER_REAL, 0.001)


def handler(signum, frame):
    handler_in.set()  # its call's wait events from here on
    try:
        t.run(lambda: setattr(t, "nargs", None))  # a call's end, as Triton's clears self.nargs
    finally:
        handler_in.clear()


signal.signal(signal.SIGALRM, handler)
sys.addaudithook(audit)


def a_body():
    t.nargs = {"who": "A"}
    inside.set()
    if not done.wait(T):
        print("handler_interrupt: the main thread's call never ended")
        os._exit(1)
    return {**t.nargs}["who"]


a = threading.Thread(target=lambda: a_result.append(t.run(a_body)), name="A")
a.start()
if not inside.wait(T):
    sys.exit(1)


def interrupter():
    if not handler_waits.wait(T):
        print("handler_interrupt: the handler's call never waited")
        os._exit(1)
    sent.append(time.monotonic())
    signal.pthread_kill(a.ident, signal.SIGINT)


threading.Thread(target=interrupter, name="interrupter", daemon=True).start()
try:
    t.run(lambda: "main")
    got = "entered"
except KeyboardInterrupt:
    got = "KeyboardInterrupt"
dt = time.monotonic() - sent[0] if sent else -1.0
still_inside = not done.is_set() and a.is_alive()
done.set()
a.join(T)
again = t.run(lambda: "again")
print(f"handler_interrupt: main's call ended with {got} {dt:.3f} s after SIGINT, A inside then: {still_inside}, "
      f"A's call returned {a_result}, again: {again}")
sys.exit(0 if got == "KeyboardInterrupt" and 0 <= dt < 1.0 and still_inside and a_result == ["A"]
         and again == "again" else 1)
