"""A thread dies inside a tuner without returning (C pthread_exit through
ctypes, which calls it with the GIL released).  The next thread to enter must
not wait for it forever (serialize) nor race with it (detect): tunerguard
finds the holder gone, releases its hold and reports it.  A second, new
thread then enters too: on glibc it may get the dead thread's stack and so
its tunerguard record's address, and must not be taken for the dead holder.
Every wait is bounded; a hang fails the test."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
a = Tuner("dying_kernel")
inside = threading.Event()


def die_inside():
    inside.set()
    ctypes.CDLL(None).pthread_exit(None)  # never returns


d = threading.Thread(target=lambda: a.run(die_inside), name="doomed", daemon=True)
d.start()
assert inside.wait(T)
# The OS thread is gone once pthread_exit ran; wait for that (bounded).
tid_gone = threading.Event()
for _ in range(int(T * 20)):
    if not os.path.exists(f"/proc/self/task/{d.native_id}"):
        break
    tid_gone.wait(0.05)
results = []


def call(tag):
    results.append(a.run(lambda: tag))


for name in ("main-call", "new-thread"):
    if name == "main-call":
        call(name)
    else:
        x = threading.Thread(target=call, args=(name,), name=name, daemon=True)
        x.start()
        x.join(T)
print("results", results)
os._exit(0 if results == ["main-call", "new-thread"] else 1)  # the dead thread never finishes
