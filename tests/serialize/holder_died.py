"""A thread dies inside a tuner without returning (C pthread_exit through
ctypes, which calls it with the GIL released).  The next thread to enter must
not wait for it forever (serialize) nor race with it (detect): tunerguard
finds the holder gone, releases its hold and reports it.  A second, new
thread then enters too: on glibc it may get the dead thread's stack and so
its tunerguard record's address, and must not be taken for the dead holder.
With the argument new-first the new thread enters before the main thread does
(else the main thread's call clears the dead holder first), and the output
says whether it got the dead thread's pthread_self() (glibc's stack cache:
the same TLS, so the same tunerguard record, a different tid).
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


libc = ctypes.CDLL(None)
libc.pthread_self.restype = ctypes.c_void_p
selves = {}


def die_inside():
    selves["doomed"] = libc.pthread_self()
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
# 3.13+ makes its threads joinable and joins them from Python, which this
# thread will never reach: detach it here, so that glibc caches its stack
# for the next thread as it does for 3.9-3.12's detached threads.
if sys.version_info >= (3, 13):
    libc.pthread_detach(ctypes.c_ulong(d.ident))
results = []


def call(tag):
    selves.setdefault(tag, libc.pthread_self())
    results.append(a.run(lambda: tag))


order = ("new-thread", "main-call") if sys.argv[1:] == ["new-first"] else ("main-call", "new-thread")
for name in order:
    if name == "main-call":
        call(name)
    else:
        x = threading.Thread(target=call, args=(name,), name=name, daemon=True)
        x.start()
        x.join(T)
print("results", results)
print("record reused", selves.get("new-thread") == selves["doomed"])
sys.stdout.flush()  # os._exit flushes nothing: a pipe's buffer would be lost
os._exit(0 if sorted(results) == ["main-call", "new-thread"] else 1)  # the dead thread never finishes
