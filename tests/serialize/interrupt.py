"""A serialize wait is interruptible, as threading.Lock().acquire() is: the
main thread waiting for a tuner that another thread holds gets the
KeyboardInterrupt of a Ctrl-C (SIGINT) while the holder is still inside, and
the wait is abandoned cleanly: no hold leaked, the queue intact.

  interrupt.py self|other|parked

self: SIGINT to the process (the main thread's wait is interrupted);
other: SIGINT delivered to the holder thread (signal.pthread_kill), so the
main thread's wait is not interrupted by the kernel and must notice the
tripped handler by itself;
parked: as other, but only once the main thread is parked in its wait for
the tuner itself (its second wait where the GIL is on: the turn's comes
first, and a signal
that lands there is noticed by the tuner wait's audit hook, Python code):
the main thread's look after a timed stretch of that wait is what finds it,
and the KeyboardInterrupt must come within 2 s of the signal (the
looks are 50 ms apart; the holder stays inside for 20 s).

Ordering by events, not time: the holder stays inside until the main thread
has its exception (so "interrupted while the holder is inside" is checked,
not timed); a second waiter thread is queued behind the main thread's wait
and must be served after the holder leaves; then the main thread enters
again.  Every wait is bounded; a hang fails the test.  Exit 0 when it held."""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
how = sys.argv[1] if len(sys.argv) > 1 else "self"
t = Tuner("interrupt_kernel")
inside = threading.Event()      # the holder is inside
release = threading.Event()     # the holder may leave
blocked = {}                    # thread name -> its waits in tunerguard so far (audit events)
blocked_cv = threading.Condition()


def audit(event, args):
    if event == "tunerguard.serialize_wait":
        with blocked_cv:
            name = threading.current_thread().name
            blocked[name] = blocked.get(name, 0) + 1
            blocked_cv.notify_all()


sys.addaudithook(audit)


def wait_blocked(name, n=1):
    with blocked_cv:
        return blocked_cv.wait_for(lambda: blocked.get(name, 0) >= n, T)


FUTEX = {"x86_64": "202", "aarch64": "98"}.get(os.uname().machine)


def main_parked():
    """Until the main thread is parked in tunerguard's wait: blocked in
    futex(FUTEX_WAIT_PRIVATE) (/proc/self/task/TID/syscall), as its park
    does; Python's own waits use FUTEX_WAIT_BITSET.  Bounded; True where
    /proc cannot say (the audit event then orders it alone)."""
    path = f"/proc/self/task/{threading.main_thread().native_id}/syscall"
    poll = threading.Event()
    for _ in range(int(T * 500)):
        try:
            with open(path) as f:
                fields = f.read().split()
        except OSError:
            return True
        if FUTEX is None:
            return True
        if fields[:1] == [FUTEX] and len(fields) > 2 and int(fields[2], 16) == 0x80:
            return True
        poll.wait(0.002)  # a poll of the condition above, not an ordering by time
    return False


left = []                       # the holder's body ended (released or timed out)


def holder_body():
    inside.set()
    released = release.wait(T)  # GIL released while it waits
    left.append(released)
    return "holder"


holder = threading.Thread(target=lambda: t.run(holder_body), name="holder")
holder.start()
assert inside.wait(T)

# serialize waits for the process's turn before the tuner's lock only where the GIL
# is on (guard/gil_state.h): without it, the tuner's wait is the first
TURN = 0 if hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled() else 1
second_result = []
sent = []                       # when the interrupter sent the signal
second = threading.Thread(target=lambda: second_result.append(t.run(lambda: "second")), name="second")


def interrupter():
    if not wait_blocked("MainThread", 1 + TURN if how == "parked" else 1):
        print("interrupt: the main thread never blocked in tunerguard")
        os._exit(1)
    second.start()  # queued behind the main thread's wait
    if not wait_blocked("second"):
        print("interrupt: the second waiter never blocked")
        os._exit(1)
    if how == "parked" and not main_parked():
        print("interrupt: the main thread never parked in its wait for the tuner")
        os._exit(1)
    sent.append(time.monotonic())
    if how == "self":
        os.kill(os.getpid(), signal.SIGINT)
    else:
        signal.pthread_kill(holder.ident, signal.SIGINT)


threading.Thread(target=interrupter, name="interrupter", daemon=True).start()
got = None
t0 = time.monotonic()
try:
    t.run(lambda: "main")  # blocks: the holder is inside
    got = "entered"
except KeyboardInterrupt:
    got = "KeyboardInterrupt"
dt = time.monotonic() - (sent[0] if sent else t0)
still_inside = not left  # the holder's body has not ended: the wait was cut short
release.set()
holder.join(T)
second.join(T)
if got != "KeyboardInterrupt" or not still_inside:
    print(f"interrupt: the main thread's wait ended with {got!r}, holder still inside: {still_inside}")
    sys.exit(1)
if how == "parked" and dt > 2.0:
    print(f"interrupt: the KeyboardInterrupt came {dt:.2f} s after the signal (the main thread looks every 0.05 s)")
    sys.exit(1)
if second.is_alive() or second_result != ["second"]:
    print(f"interrupt: the waiter behind the abandoned wait was not served ({second_result})")
    sys.exit(1)
# No hold leaked: the main thread enters again, and nothing is inside.
if t.run(lambda: "again") != "again":
    sys.exit(1)
print(f"interrupt ({how}): KeyboardInterrupt while the holder was inside, the queue served after")
sys.exit(0)
