"""serialize with wait_timeout=1: T2 waits for a tuner T1 holds while T1 is
blocked on something else (an event only the main thread sets).  After one
second tunerguard reports the long wait, naming the holder, and the wait goes
on; the main thread sees the report file appear, then releases T1.  No
sleeps for ordering: the main thread waits for conditions (with a bound)."""
import glob
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
prefix = sys.argv[1]
a = Tuner("slow_kernel")
inside, release, t2_waits = threading.Event(), threading.Event(), threading.Event()


def hook(event, args):
    if event == "tunerguard.serialize_wait":
        t2_waits.set()


sys.addaudithook(hook)


def t1():
    a.run(lambda: (inside.set(), release.wait(T)))


def t2():
    a.run(lambda: None)


x1 = threading.Thread(target=t1, name="holder")
x1.start()
assert inside.wait(T)
x2 = threading.Thread(target=t2, name="waiter")
x2.start()
assert t2_waits.wait(T), "the waiter never waited"
for _ in range(int(T * 20)):  # bounded: until the timeout report exists
    reps = [f for f in glob.glob(prefix + ".*.txt") if "longer than wait_timeout" in open(f).read()]
    if reps:
        break
    release.wait(0.05)
release.set()
x1.join(T)
x2.join(T)
sys.exit(0 if reps and not x1.is_alive() and not x2.is_alive() else 1)
