"""Threads that really run at once (a free-threaded build, PYTHON_GIL=0):
guard installs, imports and serialized waits made by many threads at the
same moment, each moment forced by a threading.Barrier.

argv[1]: a folder of modules ftmod0 .. ftmod<N-1>, each defining Sub(Tuner)
with a run() of its own (made by the driver).  First, MEET pairs of threads
each make a subclass whose metaclass meets the pair's other thread (a
barrier, at most MEET_S s) when tunerguard first reads the class's
__qualname__, which its install does after it picked the guard's slot: the
two installs overlap there for certain, unless they are kept apart (then
the first one's meeting times out).  Then N pairs of threads:

  1. all 2N threads pass one barrier, then at once: half import their
     module (the audit hook and the finder on every thread), half make a
     subclass of tgfix.tuners.Tuner with type() (type's tp_new hook), each
     with a run() of its own, then K more each: 2N(K+1) guard installs, the
     first 2N at once;
  2. for each of the 2N classes and the 2*MEET met ones, two threads call
     run() on one shared instance: A enters and waits (at most HOLD s) for
     B to come in; B calls once A is inside.  Guarded and serialized, B
     waits until A has left: A's wait times out, one serialized call and
     one race report (verbosity=2: each written) per class, which names
     the guard's method and the instance's class.

Prints one line per failure and exits 1: a call that ran another class's
run(), two threads inside one instance (a guard
lost), a thread that never finished.  The driver reads the exit line
(2N + 2*MEET races seen, at least as many calls serialized: the turn
between tuners adds its own; as many contended kernels; none still
waiting) and the reports (each names its instance's class's run())."""
import importlib
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
sys.path.insert(0, sys.argv[1])
from tgfix.tuners import Tuner  # noqa: E402

N = int(sys.argv[2])
# A report may wait 50 ms for each running thread's stack (core/thread_hold.h),
# one report at a time, and every B's report is made while its A is inside:
# on a loaded machine 2 s was seen too short (23-31 of 32 races reported).
HOLD = 6.0
if hasattr(sys, "_is_gil_enabled") and sys._is_gil_enabled() and os.environ.get("PYTHON_GIL") == "0":
    print("the GIL is on")
    sys.exit(1)

errors = []
MEET, MEET_S = 4, 0.5
meet = {}


class Meet(type):
    def __getattribute__(cls, name):
        if name == "__qualname__":
            b = meet.pop(type.__getattribute__(cls, "__name__"), None)
            if b is not None:
                try:
                    b.wait(MEET_S)
                except threading.BrokenBarrierError:
                    pass  # kept apart: the other install waits for this one
        return type.__getattribute__(cls, name)


def meet_make(name, out):
    def run(self, body, _name=name):
        return _name, body()
    out.append(Meet(name, (Tuner,), {"run": run}))


met = []
ts = []
for p in range(MEET):
    b = threading.Barrier(2)
    for side in "ab":
        meet[f"Meet{p}{side}"] = b
        ts.append(threading.Thread(target=meet_make, args=(f"Meet{p}{side}", met)))
for t in ts:
    t.start()
for t in ts:
    t.join()
for c in met:
    name, _ = c("m").run(lambda: None)
    if name != c.__name__:
        errors.append(f"{c.__name__}: run() of {name} ran")

classes = [None] * (2 * N)
start = threading.Barrier(2 * N)


K = 6  # classes each thread makes: installs overlapping in more places
more = [[] for _ in range(2 * N)]


def made(name):
    def run(self, body, _name=name):
        return _name, body()
    return type(name, (Tuner,), {"run": run})


def make(i):
    start.wait()
    if i % 2 == 0:
        classes[i] = importlib.import_module(f"ftmod{i // 2}").Sub
    else:
        classes[i] = made(f"Made{i}")
    more[i] = [made(f"More{i}_{k}") for k in range(K)]


ts = [threading.Thread(target=make, args=(i,)) for i in range(2 * N)]
for t in ts:
    t.start()
for t in ts:
    t.join()

expect = [f"Mod{i // 2}" if i % 2 == 0 else f"Made{i}" for i in range(2 * N)]
for i in range(2 * N):  # each class's own run()
    for c in more[i]:
        name, _ = c("m").run(lambda: None)
        if name != c.__name__:
            errors.append(f"{c.__name__}: run() of {name} ran")
# The pairs: the met classes first (a report names the guard's method: one
# slot shared by two installs names the other class's), then the 2N.
subjects = [(c, c.__name__) for c in met] + list(zip(classes, expect))
S = len(subjects)
inside = [0] * S
most = [0] * S
lock = threading.Lock()
calls = threading.Barrier(S)


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
    cls, want = subjects[i]
    inst = cls(f"k{i}")
    a_in, b_in = threading.Event(), threading.Event()

    def call(role):
        if role == "B":
            a_in.wait(30)
        else:
            calls.wait()
        name, _ = inst.run(lambda: body(i, a_in, b_in, role))
        if name != want:
            errors.append(f"class {i}: run() of {name} ran, {want} expected")
    return [threading.Thread(target=call, args=(r,)) for r in ("A", "B")]


ts = [t for i in range(S) for t in pair(i)]
for t in ts:
    t.start()
for t in ts:
    t.join(60)
errors += [f"class {i}: {most[i]} threads inside at once" for i in range(S) if most[i] > 1]
errors += ["a thread never finished" for t in ts if t.is_alive()]
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
