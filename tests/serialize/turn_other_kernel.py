"""serialize's turn never holds up a call of a tuner nobody else is in while
another thread tunes (docs/threads-and-processes.md).  X tunes tuner A and is
held in its tuning step (measure, named by tuning=) until Y's call of tuner B,
a tuner of its own, has returned; Y must go straight in: no
tunerguard.serialize_wait on Y (a wait for X's turn would be up to 100 ms, and
the exit line would count B as contended).  Exit 0 when it held."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.homegrown import HomeTuner  # noqa: E402

T = 10.0
a, b = HomeTuner(), HomeTuner()
x_tuning = threading.Event()
y_done = threading.Event()
y_waits = []


def audit(event, args):
    if event == "tunerguard.serialize_wait" and threading.current_thread().name == "Y":
        y_waits.append(args)


sys.addaudithook(audit)


def hold_x():
    if not x_tuning.is_set():
        x_tuning.set()
        y_done.wait(T)


x = threading.Thread(target=lambda: a.run(1, 2, hold=hold_x), name="X")
x.start()
assert x_tuning.wait(T)
y = threading.Thread(target=lambda: (b.run(3, 4), y_done.set()), name="Y")
y.start()
y.join(T)
x.join(T)
if not y_done.is_set():
    print("turn_other_kernel: Y's call of B did not return")
    sys.exit(1)
if y_waits:
    print(f"turn_other_kernel: Y waited ({len(y_waits)} serialize_wait events) behind X's tuning of another tuner")
    sys.exit(1)
print("turn_other_kernel: Y ran B at once while X tuned A")
sys.exit(0)
