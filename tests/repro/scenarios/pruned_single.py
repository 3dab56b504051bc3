#!/usr/bin/env python3
"""A call whose pruning leaves one config, inside while another thread tunes.

early_config_prune keeps one config for n=8 and all six for n=32.  Triton main
(#10413) stores the single config for n=8 without benchmarking it: that call
makes no synchronize and has no _bench frame, yet it still runs W1 and, at its
end, W2 (self.nargs = None).  Triton 3.4-3.7 benchmark the single config first.

Forced overlap: thread 'single' calls with n=8 (a cold key) and parks in the
config pre_hook that run() calls before the final launch, between W1 and W2
(on 3.4-3.7 after benchmarking its one config).  The gate is armed
and thread 'tuner' calls with n=32 (a new key); main waits until it has settled
(parked in its first benchmark synchronize, or blocked by tunerguard's serialize
mode or the --control-lock), lets 'single' finish, then opens the gate.  The
tuner's next _bench reads the self.nargs that single's W2 cleared:
    TypeError: 'NoneType' object is not a mapping.

Correct result: both calls return y == 2 * x; n=8 holds the one config its
pruning left, n=32 one of the six.
"""
import sys
import threading

import _harness

h = _harness.Harness("pruned_single", __doc__)

import triton  # noqa: E402  (the model or a release: _which_triton)
import triton.language as tl  # noqa: E402
from repro_tensor import Tensor  # noqa: E402

single_inside = threading.Event()
release_single = threading.Event()


def park_single_once(nargs):
    """Parks 'single' once, in the pre_hook run() calls before the final launch (its caller
    is run, not _bench's kernel_call: on 3.4-3.7 its benchmark has run to the end by then)."""
    if threading.current_thread().name == "single" and not single_inside.is_set() \
            and sys._getframe(1).f_code.co_name == "run":
        single_inside.set()
        if not release_single.wait(_harness.SAFETY_TIMEOUT_S):
            raise RuntimeError("single: never released")


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w, pre_hook=park_single_once) for b in (8, 16, 32) for w in (2, 4)]


def prune(configs, named_args, **kwargs):
    """One config for small n, all of them otherwise (reads the nargs it is given: R3)."""
    return configs[:1] if named_args["n"] <= 8 else configs


@triton.autotune(configs=CONFIGS, key=["n"], prune_configs_by={"early_config_prune": prune})
@triton.jit
def pruned_single_kernel(x, y, n, BLOCK: tl.constexpr):
    for i in range(n):
        y.data[i] = 2.0 * x.data[i]


N_SINGLE, N_TUNED = 8, 32


def scale(n, name):
    x = Tensor([float(j) for j in range(n)], name=f"x_{name}")
    y = Tensor.zeros(n, name=f"y_{name}")
    h.call(lambda: pruned_single_kernel[(1,)](x, y, n))
    return x, y


single = h.worker("single", lambda: [scale(N_SINGLE, "single")])
tuner = h.worker("tuner", lambda: [scale(N_TUNED, "tuner")])
single.start()
if not single_inside.wait(_harness.SAFETY_TIMEOUT_S):
    h.harness_error("thread single never reached its config pre_hook")
if not h.gate.arm():
    h.harness_error("could not arm the gate: a thread is parked in it already")


def watch_gate():  # daemon: it may outlive the run when the tuner never parks
    if h.gate.wait_parked(_harness.SAFETY_TIMEOUT_S) and h.gate.parked_tid() == tuner.native_id:
        tuner.settle("parked in the gate")


h.victim, h.others = single, [tuner]  # --expect-serialized: the tuner must wait behind 'single'
tuner.start()
threading.Thread(target=watch_gate, name="gate-watch", daemon=True).start()
if not tuner.settled.wait(_harness.SAFETY_TIMEOUT_S):
    h.harness_error("thread tuner neither parked, waited nor finished")
h.log(f"tuner settled: {tuner.how_settled}")
release_single.set()
h.join([single])
h.open_gate()
h.join([tuner])

h.check_no_exceptions()
for w in (single, tuner):
    bad = [(x.name, y.data) for x, y in w.result if y.data != [2.0 * v for v in x.data]]
    if bad:
        h.fail(f"{w.name}: wrong result {bad[0]}")
tuned = {k[0]: c for k, c in pruned_single_kernel.cache.items()}
if sorted(tuned) != [N_SINGLE, N_TUNED]:
    h.fail(f"tuned keys {sorted(tuned)}, expected {[N_SINGLE, N_TUNED]}")
if tuned[N_SINGLE] is not CONFIGS[0]:
    h.fail(f"n={N_SINGLE} holds {tuned[N_SINGLE]}, not the one config its pruning left")
h.passed(f"n={N_TUNED} tuned while a call pruned to one config (n={N_SINGLE}) returned")
