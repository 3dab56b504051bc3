"""serialize: fork while another thread holds a tuner, DataLoader-style.

Thread H parks inside a.run; the main thread then forks NCHILD children.  In
each child nobody holds anything (H does not exist there): the child calls
a.run at once without waiting, then two child threads contend on a and the
second must wait for the first (serialization works in the child), and every
call completes.  The parent then releases H.  Children report their status
through their exit code (0 = all good)."""
import os
import sys
import threading
import warnings

from common import T, join, must, on_wait, waits
from tglife.tuners import Tuner

warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
NCHILD = int(sys.argv[1]) if len(sys.argv) > 1 else 4
a = Tuner("kernel_a")
inside, release = threading.Event(), threading.Event()
h = threading.Thread(target=a.run, args=(lambda: release.wait(T),), name="H")
a_body_started = inside


def child():
    ok = a.run(lambda: "c") == "c" and not waits          # nobody holds a
    c_in, c_rel = threading.Event(), threading.Event()
    p = threading.Thread(target=a.run, args=(lambda: (c_in.set(), c_rel.wait(T)),), name="CP")
    p.start()
    must(c_in, "child holder inside")
    on_wait("CQ", c_rel.set)
    out = []
    q = threading.Thread(target=lambda: out.append(a.run(lambda: "q")), name="CQ")
    q.start()
    join([q, p])
    ok = ok and out == ["q"] and waits == ["CQ"]
    for i in range(100):                                    # and keeps working
        ok = ok and a.run(lambda i=i: i) == i
    sys.stdout.flush()
    os._exit(0 if ok else 1)


def holder_body():
    inside.set()
    return release.wait(T)


h = threading.Thread(target=a.run, args=(holder_body,), name="H")
h.start()
must(inside, "H inside")
pids = []
for _ in range(NCHILD):
    pid = os.fork()
    if pid == 0:
        child()
    pids.append(pid)
statuses = [os.waitpid(p, 0)[1] for p in pids]
release.set()
join([h])
print("CHILD_STATUSES", statuses)
print("PARENT_WAITS", len(waits))
raise SystemExit(0 if all(s == 0 for s in statuses) and not waits else 1)
