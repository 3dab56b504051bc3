"""serialize's turn (guard/serialize_wait.c) is a preference, never a deadlock: a
thread inside tuner A that waits for another thread's work must not keep that
thread out of tuner B.  X holds the turn inside A.run and waits for Y; Y calls
B.run (another tuner): it waits for the turn (the tunerguard.serialize_wait
audit event says so), goes on without it after TG_TURN_BYPASS_NS, runs B and
lets X finish.  Without the bypass Y waits for X while X waits for Y; X's
wait is bounded (T), and the test fails when it ran out.  Where the GIL is
off (a free-threaded build, PYTHON_GIL=0) there is no turn: Y must go straight
into B, with no tunerguard.serialize_wait at all.  Exit 0 when it held."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 10.0
a, b = Tuner("turn_a"), Tuner("turn_b")
x_inside = threading.Event()
y_done = threading.Event()
y_waited = threading.Event()
result = {}


def audit(event, args):
    if event == "tunerguard.serialize_wait" and threading.current_thread().name == "Y":
        y_waited.set()


sys.addaudithook(audit)


def x_body():
    x_inside.set()
    result["x"] = y_done.wait(T)  # needs Y's B.run to have returned


x = threading.Thread(target=lambda: a.run(x_body), name="X")
x.start()
assert x_inside.wait(T)
y = threading.Thread(target=lambda: (b.run(lambda: None), y_done.set()), name="Y")
y.start()
x.join(T + 5)
y.join(T + 5)
gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
if not gil:
    if y_waited.is_set():
        print("turn_bypass: without the GIL, Y waited for X's turn to call another tuner")
        sys.exit(1)
    if not result.get("x") or not y_done.is_set():
        print("turn_bypass: without the GIL, Y did not get into tuner B while X was inside A")
        sys.exit(1)
    print("turn_bypass: without the GIL, no turn: Y ran B at once while X was inside A")
    sys.exit(0)
if not y_waited.is_set():
    print("turn_bypass: Y never waited for the turn (the test did not exercise it)")
    sys.exit(1)
if not result.get("x") or not y_done.is_set():
    print("turn_bypass: Y did not get into tuner B while X held the turn in A (deadlock until X gave up)")
    sys.exit(1)
print("turn_bypass: Y waited for the turn, went on without it, ran B; X finished")
sys.exit(0)
