"""serialize: an exception inside a session releases the hold exactly once.

1. Thread A's guarded call raises: thread B then enters without waiting.
2. Exactly once: after that, P parks inside and Q must still wait for P (a
   double release would have left the count at -1 and let Q straight in).
3. Depth 2: the inner (nested, same tuner) call raises and the outer catches
   it: the outer still holds (R waits), then the outer raises: free again.
4. Depth 2 across tuners: a.run -> b.run raises: both free afterwards.
5. An asynchronous exception (PyThreadState_SetAsyncExc) delivered to a thread
   inside a guarded call: released; the next caller does not wait.
Every overlap is forced with events and tunerguard's serialize_wait event."""
import ctypes
import threading

from common import T, join, must, on_wait, waits
from tglife.tuners import Tuner

a, b = Tuner("kernel_a"), Tuner("kernel_b")
results = []


class Boom(Exception):
    pass


def raise_boom():
    raise Boom("inside")


def call(tuner, body, tag):
    try:
        results.append((tag, tuner.run(body)))
    except Boom:
        results.append((tag, "Boom"))


def run_thread(fn, name):
    th = threading.Thread(target=fn, name=name)
    th.start()
    return th


def free_now(tuner, name):
    """A fresh thread calls tuner.run and must not block in tunerguard."""
    before = waits.count(name)
    join([run_thread(lambda: call(tuner, lambda: "free", name), name)])
    return waits.count(name) == before


def serialized_now(tuner, name):
    """P parks inside tuner; Q (named name) must wait for P."""
    inside, release = threading.Event(), threading.Event()
    p = run_thread(lambda: call(tuner, lambda: (inside.set(), release.wait(T))[1], name + "-P"), name + "-P")
    must(inside, "P inside")
    on_wait(name, release.set)
    q = run_thread(lambda: call(tuner, lambda: "q", name), name)
    join([q, p])
    return waits.count(name) == 1


checks = {}
# 1 and 2
join([run_thread(lambda: call(a, raise_boom, "A"), "A")])
checks["after exception: next caller does not wait"] = free_now(a, "B")
checks["after exception: serialization still holds (released once)"] = serialized_now(a, "Q1")

# 3: nested on the same tuner, inner raises, outer continues then raises
outer_caught, release3, r_waits = threading.Event(), threading.Event(), threading.Event()


def outer():
    try:
        a.run(raise_boom)
    except Boom:
        pass
    outer_caught.set()
    must(release3, "release3")
    raise Boom("outer")


o = run_thread(lambda: call(a, outer, "O"), "O")
must(outer_caught, "inner exception caught")
on_wait("R", release3.set)
r = run_thread(lambda: call(a, lambda: "r", "R"), "R")
join([r, o])
checks["depth 2 exception: outer still held (R waited)"] = waits.count("R") == 1
checks["depth 2 exception: free after outer raised"] = free_now(a, "B2")
checks["depth 2 exception: still serializes"] = serialized_now(a, "Q2")

# 4: across tuners
join([run_thread(lambda: call(a, lambda: b.run(raise_boom), "X"), "X")])
checks["a->b raise: a free"] = free_now(a, "B3")
checks["a->b raise: b free"] = free_now(b, "B4")
checks["a->b raise: b still serializes"] = serialized_now(b, "Q3")

# 5: asynchronous exception
spin_in = threading.Event()


def spin():
    spin_in.set()
    n = 0
    while True:  # bytecode keeps running, so the async exception is delivered
        n += 1


s = run_thread(lambda: call(a, spin, "S"), "S")
must(spin_in, "spinner inside")
ctypes.pythonapi.PyThreadState_SetAsyncExc.argtypes = [ctypes.c_ulong, ctypes.py_object]
assert ctypes.pythonapi.PyThreadState_SetAsyncExc(s.ident, Boom) == 1
join([s])
checks["async exception: delivered inside the guarded call"] = ("S", "Boom") in results
checks["async exception: next caller does not wait"] = free_now(a, "B5")
checks["async exception: still serializes"] = serialized_now(a, "Q4")

for k, v in checks.items():
    print("%s %s" % ("ok" if v else "BAD", k))
print("WAITS", len(waits))
raise SystemExit(0 if all(checks.values()) else 1)
