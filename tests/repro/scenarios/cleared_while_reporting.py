#!/usr/bin/env python3
"""fast_path_first --tuner-first, with the report lock busy when 'fast'
returns: the TypeError its return causes must still be linked to the race.

A race seen at a return (thread 'fast' runs W2, self.nargs = None, while
thread 'tuner' is benchmarking) is reported under the report lock, which
another thread may hold; waiting for it lets the other threads run, 'tuner'
among them, which then reads self.nargs, raises
    TypeError: 'NoneType' object is not a mapping
and leaves its call.  Its exception is the race's: linked (the note under
the traceback, the exception record, the count in the exit line), whatever
the order in which the two threads get the lock.

Forced interleaving (Events only; a long switch interval, so a thread lets
the GIL go only where it blocks):
  1. 'tuner' calls kernel A with a new key and is held in its key (reading a
     tensor's dtype); 'fast' calls A with a tuned key and parks in its fast
     path's pre_hook (between W1 and W2); nobody was tuning at either entry.
  2. 'tuner' goes on, begins tuning and parks in its first _bench between
     the benchmark's entry and its read of self.nargs (Config.all_kwargs).
  3. Thread 'a2' tunes kernel B and parks the same way; thread 'holder'
     enters B, a race, and its report reads holder's name: the name parks,
     with the report lock held.
  4. 'fast' is released: W2, then its return finds 'tuner' benchmarking
     with self.nargs None and waits for the report lock (main sees W2 and
     runs only once 'fast' lets the GIL go).
  5. 'tuner' is released: TypeError; main runs once it has unwound out of
     run() and let the GIL go (it left its call, or waits for the lock to
     report its exception).
  6. The holder's name returns; everyone finishes.

Exit status: 1 (the TypeError is the expected finding), with the outcome
line; 2 when the choreography could not be run.  --expect-linked (3.11+):
exit 2 unless tuner's TypeError carries tunerguard's note.
"""
import sys
import threading

import _harness

h = _harness.Harness("cleared_while_reporting", __doc__, flags=("--expect-linked",))

import triton  # noqa: E402  (the model: TG_TRITON_MODEL)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

sys.setswitchinterval(1000.0)  # the GIL changes hands only where a thread blocks
T = _harness.SAFETY_TIMEOUT_S


def wait(event, what):
    if not event.wait(T):
        h.harness_error(f"never happened: {what}")


class Step:
    """A place one thread parks once: `reached` set when it gets there, then
    it waits for `go`."""

    def __init__(self, who):
        self.who, self.reached, self.go, self.armed = who, threading.Event(), threading.Event(), True

    def here(self):
        if self.armed and threading.current_thread()._name == self.who:  # not .name: holder's parks
            self.armed = False
            self.reached.set()
            if not self.go.wait(T):
                raise RuntimeError(f"{self.who}: never released")


tuner_key = Step("tuner")        # 1: tuner in its key
fast_hook = Step("fast")         # 1: fast in its fast path's pre_hook
tuner_bench = Step("tuner")      # 2: tuner in _bench, before self.nargs is read
a2_bench = Step("a2")            # 3: a2 in B's _bench
holder_name = Step("holder")     # 3: holder's name read by its report
fast_cleared = threading.Event()  # 4: fast ran W2
tuner_unwound = threading.Event()  # 5: tuner's run() frame returned by its exception


class ParkingConfig(triton.Config):
    """Parks a Step in _bench, after the benchmark began, before it reads self.nargs."""

    def all_kwargs(self):
        if sys._getframe(1).f_code.co_name == "_bench":
            for s in (tuner_bench, a2_bench):
                s.here()
        return super().all_kwargs()


def fast_pre_hook(nargs):
    fast_hook.here()


CONFIGS = [ParkingConfig({"BLOCK": b}, num_warps=w, pre_hook=fast_pre_hook) for b in (16, 32) for w in (2, 4)]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def cleared_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = 2.0 * x.data[i]


@triton.autotune(configs=[ParkingConfig({"BLOCK": b}) for b in (16, 32)], key=["n"])
@triton.jit
def busy_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = x.data[i]


class SeesClear(type(cleared_kernel)):
    """Tells main when 'fast' clears self.nargs (W2)."""

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name == "nargs" and value is None and threading.current_thread()._name == "fast":
            fast_cleared.set()


cleared_kernel.__class__ = SeesClear


class KeyTensor(Tensor):
    """A tensor whose dtype (read for the tuning key) runs `on_key` first."""

    def __init__(self, data, name, on_key):
        super().__init__(data, name=name)
        self.on_key = on_key

    @property
    def dtype(self):
        self.on_key()
        return self._dtype

    @dtype.setter
    def dtype(self, value):
        self._dtype = value


def holder_stops():
    if threading.current_thread()._name == "holder":
        raise RuntimeError("holder: stops before its tuning, as planned")


class NamedThread(threading.Thread):
    """'holder': its name, read by its race report under the report lock, parks."""

    @property
    def name(self):
        holder_name.here()
        return self._name

    @name.setter
    def name(self, value):
        self._name = value


def profile_tuner(frame, event, arg):
    code = frame.f_code
    if event == "return" and arg is None and code.co_name == "run" and "autotuner" in code.co_filename:
        tuner_unwound.set()  # run() unwound by an exception


errors = {}


def call(name, kernel, n, key_hook=lambda: None, profile=None):
    def body():
        if profile:
            sys.setprofile(profile)
        x = KeyTensor([float(j) for j in range(n)], f"x_{name}", key_hook)
        y = Tensor.zeros(n, name=f"y_{name}")
        try:
            kernel[(1,)](x, y, n)
        except BaseException as e:  # noqa: B902
            errors[name] = e
        finally:
            sys.setprofile(None)
    return body


cleared_kernel[(1,)](Tensor([1.0] * 16, name="x_warm"), Tensor.zeros(16, name="y_warm"), 16)  # n=16 tuned
for s in (tuner_key, fast_hook, tuner_bench, a2_bench, holder_name):
    s.armed = s is not holder_name

tuner = threading.Thread(target=call("tuner", cleared_kernel, 32, tuner_key.here, profile_tuner), name="tuner")
fast = threading.Thread(target=call("fast", cleared_kernel, 16), name="fast")
a2 = threading.Thread(target=call("a2", busy_kernel, 8), name="a2")
holder = NamedThread(target=call("holder", busy_kernel, 8, holder_stops), name="holder")
for t in (tuner, fast, a2, holder):
    t.daemon = True

tuner.start()
wait(tuner_key.reached, "tuner held in its key")
fast.start()
wait(fast_hook.reached, "fast parked in its fast path")
tuner_key.go.set()
wait(tuner_bench.reached, "tuner parked in its first benchmark")
a2.start()
wait(a2_bench.reached, "a2 parked in busy_kernel's benchmark")
holder_name.armed = True
holder.start()
wait(holder_name.reached, "holder's race report reading its name")
fast_hook.go.set()
wait(fast_cleared, "fast's W2")
tuner_bench.go.set()
wait(tuner_unwound, "tuner's run() ended by an exception")
holder_name.go.set()
a2_bench.go.set()
for t in (tuner, fast, a2, holder):
    t.join(T)
    if t.is_alive():
        h.harness_error(f"thread {t.name} did not end")

e = errors.get("tuner")
if not isinstance(e, TypeError):
    h.harness_error(f"tuner: want the TypeError of the cleared arguments, got {e!r}")
if set(errors) != {"tuner", "holder"}:
    h.harness_error(f"unexpected exceptions: {errors}")
notes = [n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")]
if h.args.expect_linked and sys.version_info >= (3, 11) and not notes:
    h.harness_error("tuner's TypeError carries no tunerguard note: not linked to the race")
h.fail(f"TypeError: {e}" + (f" [{notes[0]}]" if notes else ""))
