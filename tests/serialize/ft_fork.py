"""fork while another thread is inside a guard install (a free-threaded
build, PYTHON_GIL=0; it holds with a GIL too).  Thread X makes a subclass
of tgfix.tuners.Tuner whose metaclass meets the main thread (a barrier)
when tunerguard's install reads the class's __qualname__: X is inside the
install, holding the install lock, when the main thread forks.  The child
makes a subclass of its own and calls its run() on one instance from two
threads, the second once the first is inside: its install needs the lock
X held in the parent, and X is not in the child.  The child exits 0 when
its class was guarded (the second call waited: serialize), 2 when the two
calls overlapped, and dies of SIGALRM after 20 s when the install never
got the lock.  The parent exits with the child's status (a signal: 128 +
its number)."""
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

meet = threading.Barrier(2)
release = threading.Event()


class Meet(type):
    def __getattribute__(cls, name):
        if name == "__qualname__" and threading.current_thread() is not threading.main_thread() \
                and not release.is_set():
            try:
                meet.wait(10)  # X is inside the install now
            except threading.BrokenBarrierError:
                pass
            release.wait(10)  # until the main thread has forked
        return type.__getattribute__(cls, name)


def make_met():
    def run(self, body):
        return body()
    Meet("MetX", (Tuner,), {"run": run})


x = threading.Thread(target=make_met)
x.start()
meet.wait(10)
pid = os.fork()
if pid == 0:
    signal.alarm(20)

    def run(self, body):
        return body()
    Child = type("Child", (Tuner,), {"run": run})
    inst = Child("k")
    a_in, b_in = threading.Event(), threading.Event()
    overlap = []

    def a():
        inst.run(lambda: (a_in.set(), overlap.append(b_in.wait(2.0))))

    def b():
        a_in.wait(10)
        inst.run(b_in.set)
    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os._exit(2 if overlap and overlap[0] else 0)
release.set()
x.join()
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) if os.waitstatus_to_exitcode(status) >= 0
         else 128 - os.waitstatus_to_exitcode(status))
