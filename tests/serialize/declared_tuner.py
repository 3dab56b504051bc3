"""A declared home-grown tuner (targets=tgfix.homegrown:HomeTuner.run) run
from two threads.  Thread A enters run() and waits, inside measure()
('inside') or in run() before it ('outside'), on a barrier that thread B
passes only after entering run() itself; B's call returns, clearing the
arguments on the shared tuner, before A reads them: a TypeError in A.
'serialize': B cannot enter while A is inside, so A's barrier times out
(nobody comes) and A goes on alone.  Exit 3 when A raised the TypeError,
else 0.  argv[1]: inside | outside (before measure(): B's call enters
measure() while A waits; with tuning= naming it, the race is seen there) |
after (measure() returned, still in run(); B's return clears nothing A reads
again: exit 0) | serialize | sub_inside (inside, on an instance of a
subclass whose measure() overrides the base's) | replaced_outside (outside,
with HomeTuner.measure replaced by a wrapper first) | late_outside (outside,
on tgfix.late.LateTuner, imported after 40 subclasses of HomeTuner with
measure() of their own were made, 20 kept and 20 freed; exit 4 if one of
those was not freed) | stepless_freed, stepless_kept (outside, on a
subclass of tgfix.late.StepLess with its own run() and measure(), made
after 30 such subclasses were made and freed one by one, or 20 kept) |
nested_outside (outside, on a second HomeTuner that A calls from a first
one's run() after the first one's step returned) | static_steps (5
subclasses whose measure is a staticmethod; no threads, exit 0) |
many_steps (300 live subclasses with their own measure, past the table of
guards; no threads, exit 0) | inherited_outside (outside, on
tgfix.late.Inherits, whose measure() its base MeasureBase defines)."""
import gc
import os
import sys
import threading
import weakref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.homegrown import HomeTuner, SubTuner  # noqa: E402

T = 20.0
mode = sys.argv[1]
if mode == "replaced_outside":
    measure = HomeTuner.measure

    def wrapped(self, cfg, hold):
        return measure(self, cfg, hold)
    HomeTuner.measure = wrapped


def freed(classes):
    """Drop the classes made; exit 4 unless every one of them was freed."""
    refs = [weakref.ref(c) for c in classes]
    classes.clear()
    gc.collect()
    if any(r() is not None for r in refs):
        print("a subclass was kept alive")
        sys.exit(4)


def stepless_sub(i):
    from tgfix.late import StepLess, read_args

    def run(self, *args, **kw):
        return StepLess.run(self, *args, **kw)

    def measure(self, cfg, hold):
        return read_args(self, cfg, hold)
    return type(f"Sub{i}", (StepLess,), {"run": run, "measure": measure})


if mode in ("static_steps", "many_steps"):
    kept = [type(f"S{i}", (HomeTuner,), {"measure": staticmethod(lambda cfg, hold: cfg)} if mode == "static_steps"
                 else {"measure": lambda self, cfg, hold: cfg}) for i in range(5 if mode == "static_steps" else 300)]
    print("made", len(kept), HomeTuner().run(1, 2))
    sys.exit(0)
if mode == "late_outside":
    kept = [type(f"Kept{i}", (HomeTuner,), {"measure": lambda self, cfg, hold: cfg}) for i in range(20)]
    freed([type(f"Gone{i}", (HomeTuner,), {"measure": lambda self, cfg, hold: cfg}) for i in range(20)])
    from tgfix.late import LateTuner  # noqa: E402
    tuner = LateTuner()
elif mode == "inherited_outside":
    from tgfix.late import Inherits  # noqa: E402
    tuner = Inherits()
elif mode.startswith("stepless"):
    if mode == "stepless_freed":
        for i in range(30):
            freed([stepless_sub(i)])  # one at a time: each freed before the next is made
    else:
        kept = [stepless_sub(i) for i in range(20)]
    tuner = stepless_sub(99)()
else:
    tuner = SubTuner() if mode == "sub_inside" else HomeTuner()
barrier = threading.Barrier(2, timeout=2.0 if mode == "serialize" else T)
a_in, b_in, b_done = threading.Event(), threading.Event(), threading.Event()
errors = []


def a_hold():
    if a_in.is_set():
        return  # the second config: nothing to wait for
    a_in.set()
    try:
        barrier.wait()  # B passes it after entering run()
    except threading.BrokenBarrierError:
        return  # serialize: B waits outside until A leaves
    b_done.wait(T)  # B's call returned: the arguments are cleared


def b_hold():
    if b_in.is_set():
        return  # the second config
    b_in.set()
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass  # serialize: A gave up on it before B could enter


def thread_a():
    try:
        if mode == "nested_outside":
            HomeTuner().run(7, 8, hold_after=lambda: tuner.run(1, 2, hold_outside=a_hold))
        elif mode.endswith("outside") or mode.startswith("stepless"):
            tuner.run(1, 2, hold_outside=a_hold)
        elif mode == "after":
            tuner.run(1, 2, hold_after=a_hold)
        else:
            tuner.run(1, 2, hold=a_hold)
    except TypeError as e:
        errors.append(e)


def thread_b():
    a_in.wait(T)
    try:
        tuner.run(3, 4, hold=b_hold)
    finally:
        b_done.set()


a = threading.Thread(target=thread_a, name="A")
b = threading.Thread(target=thread_b, name="B")
a.start()
b.start()
a.join(T)
b.join(T)
print("errors:", errors)
sys.exit(3 if errors else 0)
