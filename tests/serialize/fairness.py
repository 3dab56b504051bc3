"""serialize mode is fair: a thread that calls a tuner in a loop must not keep
it from a thread that waits for it (seen on two H200s: one thread ran all 18
of its calls while the other waited 40 s).

Thread "looper" calls Tuner.run LOOP times; each body sleeps STEP seconds, the
GIL released, as a benchmark's synchronize does.  Thread "waiter" calls once.
Forced overlap, no ordering by time: looper's first body waits until the
waiter is blocked in tunerguard (the tunerguard.serialize_wait audit event),
so the waiter waits behind looper's first call.  With the queue of
detectors/tuner_table.h the waiter is passed over once, having waited more
than 10 ms, and from then on looper queues behind it: on an idle machine the
waiter runs within looper's first ten calls.  Without the queue it ran after all
LOOP calls.  The bound checked is a quarter of LOOP: a loaded machine may not
run the woken waiter during looper's next call or two, and the count
is the outcome that matters, not a timing.
Exit 0 when it held; 1 with a line saying when the waiter ran."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 30.0
LOOP = 100
STEP = 0.002  # the body's work, GIL released
t = Tuner("fair_kernel")
waiter_blocked = threading.Event()
calls = 0          # looper bodies started
seen_at = []       # looper's count when the waiter's body ran


def audit(event, args):
    if event == "tunerguard.serialize_wait" and threading.current_thread().name == "waiter":
        waiter_blocked.set()


sys.addaudithook(audit)


def looper_body():
    global calls
    calls += 1
    if calls == 1 and not waiter_blocked.wait(T):
        raise RuntimeError("the waiter never blocked in tunerguard")
    time.sleep(STEP)


def looper():
    for _ in range(LOOP):
        t.run(looper_body)


lt = threading.Thread(target=looper, name="looper")
lt.start()
while calls == 0 and lt.is_alive():  # looper inside its first call
    time.sleep(0.0005)  # polling a flag, not ordering: the event below orders
wt = threading.Thread(target=lambda: t.run(lambda: seen_at.append(calls)), name="waiter")
wt.start()
wt.join(T)
lt.join(T)
if lt.is_alive() or wt.is_alive() or not seen_at:
    print("fairness: a thread did not finish")
    sys.exit(1)
print(f"fairness: the waiter ran after {seen_at[0]} of looper's {LOOP} calls had started")
sys.exit(0 if seen_at[0] <= LOOP // 4 else 1)
