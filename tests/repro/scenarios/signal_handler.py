#!/usr/bin/env python3
"""A signal handler calls the autotuned kernel while the main thread waits
for it (serialize).

Forced overlap: worker-0 starts tuning and parks in the first synchronize
of its first config's do_bench, holding self.nargs.  The main thread calls
the same kernel; at its first tunerguard wait (the tunerguard.serialize_wait
audit event) a one-shot interval timer is armed, and the SIGALRM handler,
run on the main thread, calls the kernel again.  Without tunerguard (or
when the main thread runs its own call instead of waiting) the main
thread's call tunes too; either way a call that tunes and returns while
worker-0 is parked clears self.nargs under it:
    TypeError: 'NoneType' object is not a mapping
An opener thread opens the gate once the handler's call has returned or
waits in tunerguard (a wait event on the main thread while the handler
runs), or the main thread's own call returned.

Correct result: every call returns, worker-0 raised nothing, one tuned key;
with --expect-serialized (serialize), the handler's call waited in tunerguard.
"""
import signal
import sys
import threading

import _harness

h = _harness.Harness("signal_handler", __doc__)

import triton  # noqa: E402  (the model or a release: _which_triton)


@triton.autotune(configs=[triton.Config({"N": n}) for n in range(4)], key=[])
@triton.jit
def signal_handler_kernel(N: triton.language.constexpr = 0):
    pass


def kernel():
    return h.call(lambda: signal_handler_kernel[(1,)]())


handler_in = threading.Event()
settled = threading.Event()  # the handler's call returned or waits, or the main thread's returned
armed, handler_waited = [], []


def audit(event, args):
    if event != _harness.AUDIT_EVENT or threading.current_thread() is not threading.main_thread():
        return
    if handler_in.is_set():
        handler_waited.append(1)
        settled.set()
    elif not armed:
        armed.append(1)
        signal.setitimer(signal.ITIMER_REAL, 0.001)


def handler(signum, frame):
    handler_in.set()
    try:
        kernel()
    finally:
        settled.set()


def opener():
    if not settled.wait(_harness.SAFETY_TIMEOUT_S):
        h.harness_error("the handler's call neither returned nor waited")
    h.open_gate()


signal.signal(signal.SIGALRM, handler)
sys.addaudithook(audit)
victim = h.worker("worker-0", kernel)
h.start_victim(victim)
threading.Thread(target=opener, name="opener", daemon=True).start()
if h.args.control_lock:
    settled.set()  # the victim holds the lock: the main thread's call waits for it there
try:
    kernel()
finally:
    settled.set()
h.join([victim])
h.check_no_exceptions()
if not handler_in.is_set() and not h.args.control_lock:
    h.fail("the signal's handler never ran")
if h.args.expect_serialized and not handler_waited:
    h.fail("the handler's call did not wait in tunerguard")
if list(signal_handler_kernel.cache) != [()]:
    h.fail(f"expected one tuned key (), cache holds {list(signal_handler_kernel.cache)}")
h.passed("the handler's call and the main thread's returned")
