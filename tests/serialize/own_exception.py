"""serialize: an exception that a call raises itself after it waited for the
tuner and then ran alone is the program's own, not the race's: it gets no
exception report and (3.11+) no note pointing at a race, and exitcode= is
not set by the prevented race (the runner passes exitcode=9).

The holder sits in a function named _bench (tuning, so the wait prevents a
high-severity race) until the waiter is blocked in tunerguard (the audit
event); then the waiter's own body raises ValueError.  Exit 0 when it held."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
t = Tuner("own_exception_kernel")
blocked = threading.Event()


def audit(event, args):
    if event == "tunerguard.serialize_wait" and threading.current_thread().name == "waiter":
        blocked.set()


sys.addaudithook(audit)
inside = threading.Event()


def _bench():
    inside.set()
    if not blocked.wait(T):
        raise RuntimeError("the waiter never blocked")


holder = threading.Thread(target=lambda: t.run(_bench), name="holder")
holder.start()
assert inside.wait(T)
caught = []


def boom():
    raise ValueError("the program's own error")


def waiter():
    try:
        t.run(boom)
    except ValueError as e:
        caught.append(e)


w = threading.Thread(target=waiter, name="waiter")
w.start()
w.join(T)
holder.join(T)
if not caught:
    print("own_exception: the waiter's ValueError did not come")
    sys.exit(1)
notes = getattr(caught[0], "__notes__", [])
if any("tunerguard" in n for n in notes):
    print(f"own_exception: the program's own exception got a note: {notes}")
    sys.exit(1)
print("own_exception: no note, no link")
sys.exit(0)
