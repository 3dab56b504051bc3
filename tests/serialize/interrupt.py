"""A serialize wait is interruptible, as threading.Lock().acquire() is: the
main thread waiting for a tuner that another thread holds gets the
KeyboardInterrupt of a Ctrl-C (SIGINT) while the holder is still inside, and
the wait is abandoned cleanly: no hold leaked, the queue intact.

  interrupt.py self|other

self: SIGINT to the process (the main thread's wait is interrupted);
other: SIGINT delivered to the holder thread (signal.pthread_kill), so the
main thread's wait is not interrupted by the kernel and must notice the
tripped handler by itself.

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
blocked = {}                    # thread name -> blocked in tunerguard (audit event)
blocked_cv = threading.Condition()


def audit(event, args):
    if event == "tunerguard.serialize_wait":
        with blocked_cv:
            blocked[threading.current_thread().name] = True
            blocked_cv.notify_all()


sys.addaudithook(audit)


def wait_blocked(name):
    with blocked_cv:
        return blocked_cv.wait_for(lambda: blocked.get(name), T)


left = []                       # the holder's body ended (released or timed out)


def holder_body():
    inside.set()
    released = release.wait(T)  # GIL released while it waits
    left.append(released)
    return "holder"


holder = threading.Thread(target=lambda: t.run(holder_body), name="holder")
holder.start()
assert inside.wait(T)

second_result = []
second = threading.Thread(target=lambda: second_result.append(t.run(lambda: "second")), name="second")


def interrupter():
    if not wait_blocked("MainThread"):
        print("interrupt: the main thread never blocked in tunerguard")
        os._exit(1)
    second.start()  # queued behind the main thread's wait
    if not wait_blocked("second"):
        print("interrupt: the second waiter never blocked")
        os._exit(1)
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
dt = time.monotonic() - t0
still_inside = not left  # the holder's body has not ended: the wait was cut short
release.set()
holder.join(T)
second.join(T)
if got != "KeyboardInterrupt" or not still_inside:
    print(f"interrupt: the main thread's wait ended with {got!r}, holder still inside: {still_inside}")
    sys.exit(1)
if second.is_alive() or second_result != ["second"]:
    print(f"interrupt: the waiter behind the abandoned wait was not served ({second_result})")
    sys.exit(1)
# No hold leaked: the main thread enters again, and nothing is inside.
if t.run(lambda: "again") != "again":
    sys.exit(1)
print(f"interrupt ({how}): KeyboardInterrupt while the holder was inside, the queue served after")
sys.exit(0)
