"""fork() while another thread is in the middle of writing a report (it holds
tunerguard's report lock and waits, the GIL released, in Python code the
report runs: here the `name` property of its Thread) must not leave the
child with that lock held by a thread it does not have: the child's first
report would wait for ever.

Ordering by events: the parent's 'slow' thread enters a tuner that 'holder'
is inside (in a function named _bench: high severity), and its report asks
slow's name, which waits for `release`; once that wait has begun, the main
thread forks.  The child starts a holder of its own and enters the tuner:
its race report must be written and the call return (bounded by alarm(20);
exit 0).  Exit 0 when the child did."""
import os
import signal
import sys
import threading
import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

T = 20.0
t = Tuner("fork_report_kernel")
inside = threading.Event()
naming = threading.Event()
release = threading.Event()


def _bench():  # the holder's body: a tuning-named frame, so the entry is a high race
    inside.set()
    release.wait(T)


class SlowName(threading.Thread):
    @property
    def name(self):
        if not naming.is_set() and threading.current_thread() is self:
            naming.set()      # the report of this thread's race asks its name, under the report lock
            release.wait(T)
        return self._name

    @name.setter
    def name(self, value):
        self._name = value


holder = threading.Thread(target=lambda: t.run(_bench), name="holder")
holder.start()
assert inside.wait(T)
slow = SlowName(target=lambda: t.run(lambda: None))
slow._name = "slow"
slow.start()
if not naming.wait(T):
    print("fork_in_report: the report never asked the thread's name")
    sys.exit(1)
pid = os.fork()
if pid == 0:
    signal.alarm(20)  # a hang ends the child with SIGALRM
    c_inside = threading.Event()
    c_release = threading.Event()

    def _bench():  # noqa: F811  (the child's holder)
        c_inside.set()
        c_release.wait(T)

    h2 = threading.Thread(target=lambda: t.run(_bench), name="child-holder")
    h2.start()
    c_inside.wait(T)
    t.run(lambda: None)  # a race: its report needs the report lock
    c_release.set()
    h2.join(T)
    os._exit(0)
_, status = os.waitpid(pid, 0)
release.set()
holder.join(T)
slow.join(T)
ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
print(f"fork_in_report: child {'returned' if ok else 'hung or failed (status %d)' % status}")
sys.exit(0 if ok else 1)
