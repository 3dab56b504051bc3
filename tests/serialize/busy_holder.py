"""serialize with wait_timeout=1, on_wait_timeout=proceed: a holder that
runs (here it computes for 3.5 s, as a long benchmark or compile does) is
waited for past wait_timeout; only a holder blocked outside tunerguard
lets the waiter proceed.  The waiter's call must begin after the holder's
ended.  Ordered by events and tunerguard's audit event; bounded."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
SPIN = 3.5
a = Tuner("busy_kernel")
inside, waits = threading.Event(), threading.Event()
marks = {}


def audit(event, args):
    if event == "tunerguard.serialize_wait" and threading.current_thread().name == "waiter":
        waits.set()


sys.addaudithook(audit)


def holder():
    def body():
        inside.set()
        assert waits.wait(T), "the waiter never waited"
        end = time.monotonic() + SPIN
        n = 0
        while time.monotonic() < end:  # runs: CPU time all along
            n += 1
        marks["holder_end"] = time.monotonic()
        return n
    a.run(body)


def waiter():
    assert inside.wait(T)
    a.run(lambda: marks.setdefault("waiter_start", time.monotonic()))


th = [threading.Thread(target=holder, name="holder"), threading.Thread(target=waiter, name="waiter")]
for x in th:
    x.start()
for x in th:
    x.join(T)
if any(x.is_alive() for x in th) or len(marks) != 2:
    print("busy_holder: unfinished", marks)
    sys.exit(1)
order = "after" if marks["waiter_start"] >= marks["holder_end"] else "before"
print(f"the waiter entered {order} the holder left")
sys.exit(0 if order == "after" else 1)
