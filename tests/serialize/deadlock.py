"""Two threads take two tuners in opposite order under serialize: T1 holds A
and calls B, T2 holds B and calls A.  tunerguard must find the cycle when it
forms, report it, and (deadlock=proceed) let the youngest waiter through, so
the program ends.  Forced with events and tunerguard's own audit event, no
sleeps; every wait has a safety timeout that fails the test instead of
hanging."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
a, b = Tuner("kernel_a"), Tuner("kernel_b")
a_in, b_in, t1_waits = threading.Event(), threading.Event(), threading.Event()
done = {}


def hook(event, args):
    if event == "tunerguard.serialize_wait" and threading.current_thread().name == "T1":
        t1_waits.set()


sys.addaudithook(hook)


def t1():
    def inside_a():
        a_in.set()
        assert b_in.wait(T)
        return b.run(lambda: "b-from-t1")
    done["T1"] = a.run(inside_a)


def t2():
    def inside_b():
        b_in.set()
        assert a_in.wait(T)
        assert t1_waits.wait(T), "T1 never waited for B"
        return a.run(lambda: "a-from-t2")
    done["T2"] = b.run(inside_b)


th = [threading.Thread(target=t1, name="T1"), threading.Thread(target=t2, name="T2")]
for x in th:
    x.start()
for x in th:
    x.join(T)
alive = [x.name for x in th if x.is_alive()]
if alive:
    print("deadlock: still blocked:", alive, file=sys.stderr)
    os._exit(3)
print("results", sorted(done.items()))
sys.exit(0 if done == {"T1": "b-from-t1", "T2": "a-from-t2"} else 1)
