#!/usr/bin/env python3
"""hammer's race the other way round (anatomy note §8.4 R2): the thread on the
fast path of a tuned key is inside FIRST, and a thread that tunes a new key
enters while it is there.  At that entry nothing is benchmarking yet, so it is
only an overlap on a tuned key; the damage comes when the fast-path call
returns and runs W2 (self.nargs = None) under the tuning thread, whose next
_bench raises
    TypeError: 'NoneType' object is not a mapping.

Forced overlap: the main thread tunes n=16.  Thread 'fast' calls with n=16 and
parks in the config pre_hook of its fast path (run() calls it between W1 and
W2; Event.wait releases the GIL).  The gate is armed and thread 'tuner' calls
with n=32 (a new key); main waits until it has settled: parked in its first
benchmark synchronize (the gate), or blocked by tunerguard's serialize mode or
by the --control-lock.  Main then lets 'fast' finish, joins it, opens the gate
and joins 'tuner'.

Correct result: both calls return y == 2 * x, and both keys end up tuned.

--tuner-first: 'tuner' is inside FIRST, held in its key computation (reading
a tensor's dtype, as a GIL switch there would hold it: before any tuning, so
when 'fast' enters nobody is benchmarking); 'fast' enters and parks in its
pre_hook; 'tuner' goes on and parks in its first benchmark; 'fast' returns:
the later call's W2 clears self.nargs under the earlier, tuning one.

--whole-call: as --tuner-first, but 'fast' does not park: its whole call,
W1 to W2, runs while 'tuner' is held in its key; 'tuner' then begins tuning
with self.nargs already None.

--after-clear: 'fast' parks after run() returned instead (a subclass whose run
does more work after super().run(), here waiting on an Event): its W2 came
before the tuner's W1, so nothing is cleared under the tuner and the program is
correct; tunerguard must not report a race when 'fast' returns.
"""
import threading

import _harness

h = _harness.Harness("fast_path_first", __doc__, flags=("--after-clear", "--tuner-first", "--whole-call"))

import triton  # noqa: E402  (the model or a release: _which_triton)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

fast_inside = threading.Event()
release_fast = threading.Event()


def park_fast_once(nargs=None):
    """Every config's pre_hook (or, --after-clear, the end of run): parks
    thread 'fast' on its first call."""
    if threading.current_thread().name == "fast" and not fast_inside.is_set():
        fast_inside.set()
        h.current_worker().settle("parked in its fast path")
        if not release_fast.wait(_harness.SAFETY_TIMEOUT_S):
            raise RuntimeError("fast: never released")


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w,
                           pre_hook=None if h.args.after_clear or h.args.whole_call else park_fast_once)
             for b in (16, 32, 64) for w in (2, 4)],
    key=["n"],
)
@triton.jit
def fast_first_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = 2.0 * x.data[i]


if h.args.after_clear:
    class PostWork(type(fast_first_kernel)):
        """run() that does more after super().run(): W2 has run, the GIL is let go."""
        def run(self, *args, **kwargs):
            ret = super().run(*args, **kwargs)
            park_fast_once()
            return ret

    fast_first_kernel.__class__ = PostWork

N_WARM, N_NEW = 16, 32


def tuner_in_key_then_fast():
    """'tuner' in first, held in its key; then 'fast', until it settles (its
    call done, parked in its pre_hook, or waiting)."""
    h.victim, h.others = tuner, [fast]  # --expect-serialized: fast must wait behind tuner
    tuner.start()
    if not tuner_in_key.wait(_harness.SAFETY_TIMEOUT_S):
        h.harness_error("thread tuner never reached its key")
    fast.start()
    if not fast.settled.wait(_harness.SAFETY_TIMEOUT_S):
        h.harness_error("thread fast neither finished, parked nor waited")


def whole_call():
    """--whole-call's choreography, to the end of the run."""
    tuner_in_key_then_fast()
    release_tuner_key.set()
    h.join([tuner, fast])
    verdict()


def tuner_first():
    """--tuner-first's choreography, to the end of the run."""
    tuner_in_key_then_fast()
    parked = fast.how_settled == "parked in its fast path"  # else it waits (tunerguard, the control lock)
    if not h.gate.arm():
        h.harness_error("could not arm the gate: a thread is parked in it already")
    release_tuner_key.set()
    if not h.gate.wait_parked(_harness.SAFETY_TIMEOUT_S) or h.gate.parked_tid() != tuner.native_id:
        h.harness_error("thread tuner did not park in its benchmark")
    release_fast.set()
    if parked:
        h.join([fast])  # its return (W2) under the parked tuner
    h.open_gate()
    h.join([tuner, fast])
    verdict()


def verdict():
    h.check_no_exceptions()
    for w in (fast, tuner):
        bad = [(x.name, y.data) for x, y in w.result if not ok(x, y)]
        if bad:
            h.fail(f"{w.name}: wrong result {bad[0]}")
    keys = sorted(k[0] for k in fast_first_kernel.cache)
    if keys != [N_WARM, N_NEW]:
        h.fail(f"tuned keys {keys}, expected {[N_WARM, N_NEW]}")
    h.passed(f"key n={N_NEW} tuned while a fast-path call of n={N_WARM} returned")


tuner_in_key = threading.Event()
release_tuner_key = threading.Event()


class HeldTensor(Tensor):
    """--tuner-first: the first read of its dtype (the tuning key) holds the
    reading thread until main lets it go."""
    @property
    def dtype(self):
        if not tuner_in_key.is_set():
            tuner_in_key.set()
            if not release_tuner_key.wait(_harness.SAFETY_TIMEOUT_S):
                raise RuntimeError("tuner: never released from its key")
        return self._dtype

    @dtype.setter
    def dtype(self, value):
        self._dtype = value


def scale(n, name):
    cls = HeldTensor if (h.args.tuner_first or h.args.whole_call) and name == "tuner" else Tensor
    x = cls([float(j) for j in range(n)], name=f"x_{name}")
    y = Tensor.zeros(n, name=f"y_{name}")
    h.call(lambda: fast_first_kernel[(1,)](x, y, n))
    return x, y


def ok(x, y):
    return y.data == [2.0 * v for v in x.data]


x, y = scale(N_WARM, "warm")  # key n=16 tuned on the main thread
if not ok(x, y):
    h.fail(f"warm-up call gave {y.data}")

fast = h.worker("fast", lambda: [scale(N_WARM, "fast")])
tuner = h.worker("tuner", lambda: [scale(N_NEW, "tuner")])
if h.args.whole_call:
    whole_call()
if h.args.tuner_first:
    tuner_first()
fast.start()
if not fast_inside.wait(_harness.SAFETY_TIMEOUT_S):
    h.harness_error("thread fast never reached its fast-path pre_hook")
if not h.gate.arm():
    h.harness_error("could not arm the gate: a thread is parked in it already")


def watch_gate():  # daemon: it may outlive the run when the tuner never parks
    if h.gate.wait_parked(_harness.SAFETY_TIMEOUT_S) and h.gate.parked_tid() == tuner.native_id:
        tuner.settle("parked in the gate")


h.victim, h.others = fast, [tuner]  # --expect-serialized: tuner must wait behind fast
tuner.start()
threading.Thread(target=watch_gate, name="gate-watch", daemon=True).start()
if not tuner.settled.wait(_harness.SAFETY_TIMEOUT_S):
    h.harness_error("thread tuner neither parked, waited nor finished")
h.log(f"tuner settled: {tuner.how_settled}")
release_fast.set()
h.join([fast])
h.open_gate()
h.join([tuner])
verdict()
