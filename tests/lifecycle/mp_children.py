"""multiprocessing with a given start method (spawn, forkserver, fork): each
child inherits LD_PRELOAD, arms on its own (the tuner class is guarded in
the child), detects the race it forces, and writes its own report files
(pid in the name).  The parent races nothing.

    mp_children.py METHOD NCHILD"""
import multiprocessing as mp
import sys

from common import guarded
from fork_race_child_lib import race
from tglife.tuners import Tuner


def child(q):
    import os
    ok = guarded(Tuner)
    race(Tuner("kernel_mp"))
    q.put((os.getpid(), ok))


if __name__ == "__main__":
    method, n = sys.argv[1], int(sys.argv[2])
    ctx = mp.get_context(method)
    q = ctx.Queue()
    ps = [ctx.Process(target=child, args=(q,)) for _ in range(n)]
    for p in ps:
        p.start()
    got = [q.get(timeout=60) for _ in ps]
    for p in ps:
        p.join(60)
    codes = [p.exitcode for p in ps]
    print("CHILDREN", " ".join(str(pid) for pid, _ in got))
    print("GUARDED_IN_CHILD", all(ok for _, ok in got))
    print("EXITCODES", codes)
    raise SystemExit(0 if codes == [0] * n and all(ok for _, ok in got) and guarded(Tuner) else 1)
