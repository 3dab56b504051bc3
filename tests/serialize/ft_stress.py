"""Threads that really run at once (a free-threaded build, PYTHON_GIL=0):
guard installs, imports and serialized waits made by many threads at the
same moment, each moment forced by a threading.Barrier.

argv[1]: a folder of modules ftmod0 .. ftmod<N-1>, each defining Sub(Tuner)
with a run() of its own (made by the driver).  N pairs of threads:

  1. all 2N threads pass one barrier, then at once: half import their
     module (the audit hook and the finder on every thread), half make a
     subclass of tgfix.tuners.Tuner with type() (type's tp_new hook), each
     with a run() of its own: 2N guard installs at once;
  2. for each of the 2N classes, two threads call run() on one shared
     instance: A enters and waits (at most HOLD s) for B to come in; B
     calls once A is inside.  Guarded and serialized, B waits until A has
     left: A's wait times out, one serialized call per class.

Prints one line per failure and exits 1: a call that ran another class's
run() (a guard slot taken twice), two threads inside one instance (a guard
lost), a thread that never finished.  The driver reads the exit line: 2N
races seen, at least 2N calls serialized (the turn between tuners adds
its own), 2N contended kernels, none still waiting."""
import importlib
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
sys.path.insert(0, sys.argv[1])
from tgfix.tuners import Tuner  # noqa: E402

N = int(sys.argv[2])
HOLD = 2.0
if hasattr(sys, "_is_gil_enabled") and sys._is_gil_enabled() and os.environ.get("PYTHON_GIL") == "0":
    print("the GIL is on")
    sys.exit(1)

classes = [None] * (2 * N)
errors = []
start = threading.Barrier(2 * N)


def make(i):
    start.wait()
    if i % 2 == 0:
        classes[i] = importlib.import_module(f"ftmod{i // 2}").Sub
    else:
        def run(self, body, _name=f"Made{i}"):
            return _name, body()
        classes[i] = type(f"Made{i}", (Tuner,), {"run": run})


ts = [threading.Thread(target=make, args=(i,)) for i in range(2 * N)]
for t in ts:
    t.start()
for t in ts:
    t.join()

expect = [f"Mod{i // 2}" if i % 2 == 0 else f"Made{i}" for i in range(2 * N)]
inside = [0] * (2 * N)
most = [0] * (2 * N)
lock = threading.Lock()
calls = threading.Barrier(2 * N)


def body(i, a_in, b_in, role):
    with lock:
        inside[i] += 1
        most[i] = max(most[i], inside[i])
    if role == "A":
        a_in.set()
        b_in.wait(HOLD)  # B comes in only if the guard lets it
    else:
        b_in.set()
    with lock:
        inside[i] -= 1
    return role


def pair(i):
    inst = classes[i](f"k{i}")
    a_in, b_in = threading.Event(), threading.Event()

    def call(role):
        if role == "B":
            a_in.wait(30)
        else:
            calls.wait()
        name, _ = inst.run(lambda: body(i, a_in, b_in, role))
        if name != expect[i]:
            errors.append(f"class {i}: run() of {name} ran, {expect[i]} expected")
    return [threading.Thread(target=call, args=(r,)) for r in ("A", "B")]


ts = [t for i in range(2 * N) for t in pair(i)]
for t in ts:
    t.start()
for t in ts:
    t.join(60)
errors += [f"class {i}: {most[i]} threads inside at once" for i in range(2 * N) if most[i] > 1]
errors += ["a thread never finished" for t in ts if t.is_alive()]
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
