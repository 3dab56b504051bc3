"""serialize: a deadlock through a lock of the program's, which tunerguard
cannot see.  The holder, inside the tuner, waits for a threading.Lock that
the other thread holds, and that thread then calls the same tuner, so it
waits for the holder.  Without tunerguard, or in detect mode, the program
finishes (the second call just runs).  Under serialize with wait_timeout=1
and on_wait_timeout=proceed, past that second the waiter finds the holder
blocked outside tunerguard (no CPU time, no CUDA call) and proceeds
unserialized: both threads finish, and the wait_timeout report says so.

  user_lock.py [HOLD_S]

HOLD_S (default 20): how long the holder waits for the lock before it
gives up (then the program ends with exit 1: the waiter never went on).
Ordered by events, no sleeps; every wait is bounded, so a deadlock fails
the test instead of hanging it."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 30.0
hold = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
a = Tuner("user_lock_kernel")
lock = threading.Lock()
inside, w_holds = threading.Event(), threading.Event()
done = {}


def holder():
    def body():
        inside.set()
        assert w_holds.wait(T)
        got = lock.acquire(timeout=hold)  # blocked: the waiter holds it until its tuned call returns
        if got:
            lock.release()
        return got
    done["holder"] = a.run(body)


def waiter():
    assert inside.wait(T)
    with lock:
        w_holds.set()
        done["waiter"] = a.run(lambda: "waiter")  # waits for the holder, who waits for this lock


th = [threading.Thread(target=holder, name="holder"), threading.Thread(target=waiter, name="waiter")]
for x in th:
    x.start()
for x in th:
    x.join(T + hold)
alive = [x.name for x in th if x.is_alive()]
if alive:
    print("user_lock: still blocked:", alive, file=sys.stderr)
    os._exit(3)
print("results", sorted(done.items()))
sys.exit(0 if done == {"holder": True, "waiter": "waiter"} else 1)
