"""fork() from inside a guarded call: the child goes on in that call, returns
through its guard, and keeps using the tuner.  Serialize must still hold in
the child.  Before the fix the child's copy of the forking thread had its
counters reset at fork and then counted out on the way out of the call (its
nesting depth and holds below zero, its `busy` overwritten), and every later
call of that thread passed through unguarded.

Ordering by events: in the child, thread P enters the tuner and waits for
`release`, which a timer sets 0.5 s later; the main thread then calls the
same tuner.  Under serialize it can only return after P left, so `release`
is set by then.  argv[1] "inside" forks inside a.run, "outside" before it (the
control).  Exit 0 when the child's main thread waited for P."""
import os
import sys
import threading
import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
a = Tuner("fork_kernel")

pid = a.run(os.fork) if sys.argv[1:] == ["inside"] else os.fork()
if pid:
    _, st = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
    print(f"parent: child exit {code}")
    sys.exit(code)

a.run(lambda: None)  # the child's main thread: an outermost call after the fork's frame
p_in, release = threading.Event(), threading.Event()


def body_p():
    p_in.set()
    release.wait(T)


p = threading.Thread(target=a.run, args=(body_p,))
p.start()
p_in.wait(T)
threading.Timer(0.5, release.set).start()
a.run(lambda: None)  # must wait for P
waited = release.is_set()
p.join(T)
print(f"child: the main thread's call returned {'after' if waited else 'before'} P left")
sys.stdout.flush()
os._exit(0 if waited else 1)
