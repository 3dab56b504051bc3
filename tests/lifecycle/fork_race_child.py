"""detect: os.fork from Python; the child forces a race on a tuner and must
write its own report files (its pid in the name); the parent, which raced
nothing, writes none.  Prints CHILD_PID <pid>."""
import os

from fork_race_child_lib import race
from tglife.tuners import Tuner

a = Tuner("kernel_fork")
a.run(lambda: None)  # the parent uses it, alone
pid = os.fork()
if pid == 0:
    race(a)
    os._exit(0)
_, st = os.waitpid(pid, 0)
print("CHILD_PID", pid, "STATUS", st)
raise SystemExit(0 if st == 0 else 1)
