"""What handler_alarm.py, handler_kill.py and handler_audit.py share: a
kernel called from a signal handler (or an audit hook) on the main thread
while the main thread waits for that kernel's tuner (serialize), ordered
by events.

Thread A calls the kernel and stays inside, its call's state kept on the
shared object (t.nargs, as Triton's Autotuner keeps self.nargs), until the
handler's call has either returned (it went in past A: the race) or blocked
in tunerguard (a tunerguard.serialize_wait audit event on the main thread
while the handler runs); then A reads its state, None if the handler's call
went in and cleared it (TypeError: 'NoneType' object is not a mapping).

serialize: the main thread calls the kernel too and waits for A; at its
first wait (the audit event) arm() makes the signal come (or calls the
handler itself).  detect
(TUNERGUARD_OPTIONS has mode=detect): nothing waits, so the main thread
does not call the kernel itself; it calls arm() and polls for the handler's
call (the handler runs between the polls), which races with A.

run_main() returns the exit status: 0 when A read its own state and every
call returned (serialize: A's first, then the handler's, then the main
thread's, in the order their bodies ran inside the tuner); 3 when A raised the TypeError; 1 when an event never came or
the order was wrong.  Every wait is bounded."""
import os
import signal
import threading

from tgfix.tuners import Tuner

T = 20.0
DETECT = "mode=detect" in os.environ.get("TUNERGUARD_OPTIONS", "")
t = Tuner("handler_kernel")
inside = threading.Event()       # A is inside
handler_in = threading.Event()   # the handler runs
release = threading.Event()      # A may read its state
handler_done = threading.Event()
order = []                       # calls that returned, in order
armed = []


def call(name, hold=None):
    def body():
        t.nargs = {"who": name}
        if hold:
            hold()
        full = {**t.nargs}  # None here: the TypeError of a call cleared meanwhile
        t.nargs = None
        # Recorded inside the call, where serialize orders the calls: once a
        # call leaves, the next one runs, and without the GIL it may get to
        # its own record before the one that left gets back from t.run.
        order.append(full["who"])
        return full["who"]
    return t.run(body)


def handler(signum, frame):
    handler_in.set()
    try:
        call("handler")
    finally:
        release.set()  # returned or raised: A may go on
        handler_done.set()


def audit(event, args):
    if event != "tunerguard.serialize_wait" or threading.current_thread() is not threading.main_thread():
        return
    if handler_in.is_set():
        release.set()  # the handler's call waits in tunerguard: A may go on
    elif not armed:
        armed.append(1)
        arm()


def arm():
    raise NotImplementedError  # the program's own (install)


def install(signum, arm_fn):
    """signum: the signal whose handler calls the kernel; None: arm_fn calls it."""
    global arm
    arm = arm_fn
    if signum is not None:
        signal.signal(signum, handler)
    if not DETECT:
        import sys
        sys.addaudithook(audit)


def run_main():
    a_error = []

    def a_hold():
        inside.set()
        if not release.wait(T):
            print("handler: the handler's call neither returned nor waited")
            os._exit(1)

    def a_run():
        try:
            call("A", a_hold)
        except TypeError as e:
            a_error.append(e)
    a = threading.Thread(target=a_run, name="A")
    a.start()
    if not inside.wait(T):
        return 1
    if DETECT:
        arm()
        # Short waits: the handler runs between them, in the eval loop (a
        # lock's wait interrupted by the signal runs no handler on 3.12).
        if not any(handler_done.wait(0.005) for _ in range(int(T / 0.005))):
            print("handler: the signal's handler never ran")
            return 1
    else:
        call("main")
    a.join(T)
    print(f"handler: calls ran in the order {order}")
    if a_error:
        print(f"handler: A raised {a_error[0]!r}")
        return 3
    want = ["A", "handler"] if DETECT else ["A", "handler", "main"]
    return 0 if order == want else 1
