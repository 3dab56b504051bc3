"""Shared choreography for the reproducer scenarios.

Every scenario forces the same overlap, with no sleeps and no luck:

  1. (optional) the main thread warms a key, with the gate closed;
  2. the gate of the stand-in libcuda is armed and the VICTIM thread calls the
     autotuned kernel; it is tuning, so its do_bench reaches cuCtxSynchronize and
     parks there (GIL released), between W1 (self.nargs = ...) and its next read
     of self.nargs; main waits for fakecuda_gate_wait_parked();
  3. main starts the OTHER threads, which call the same kernel, and waits until
     each one has *settled*: finished (returned or raised), or blocked by
     tunerguard in serialize mode (the "tunerguard.serialize_wait" audit event,
     raised just before it blocks), or blocked on the --control-lock, or held by
     the scenario's own hold point (reset_to_zero only);
  4. main opens the gate, joins the victim, releases any hold, joins the rest,
     and the scenario checks the results.

Exit status: 0 correct results and no exception; 1 the race showed (an
exception in a thread, or wrong numbers), with one line "repro <name>: FAIL: ..."
last on stderr; 2 the harness itself could not run the choreography (gate never
parked, a thread neither finished nor waited within SAFETY_TIMEOUT_S, a join
timed out), so a broken set-up never counts as the expected failure.

--control-lock wraps every kernel call of the scenario in one threading.Lock,
the workaround users write by hand; with it every scenario must pass without
tunerguard, which shows the failure is the autotuner race and nothing else.
"""
import argparse
import ctypes
import os
import sys
import threading
import traceback

REPRO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
import _which_triton  # noqa: E402,F401  (the model, or the release: TG_TRITON_RELEASE; before `import triton`)

SAFETY_TIMEOUT_S = 30.0
EXIT_PASS, EXIT_RACE, EXIT_HARNESS = 0, 1, 2
AUDIT_EVENT = "tunerguard.serialize_wait"


class Gate:
    """The test gate exported by the stand-in libcuda (build/tests/fakecuda)."""

    def __init__(self):
        lib = ctypes.CDLL("libcuda.so.1")  # CDLL: the GIL is released while main waits here
        lib.fakecuda_gate_arm.argtypes = []
        lib.fakecuda_gate_arm.restype = ctypes.c_int
        lib.fakecuda_gate_wait_parked.argtypes = [ctypes.c_double]
        lib.fakecuda_gate_wait_parked.restype = ctypes.c_int
        lib.fakecuda_gate_open.argtypes = []
        lib.fakecuda_gate_open.restype = None
        lib.fakecuda_gate_parked_tid.argtypes = []
        lib.fakecuda_gate_parked_tid.restype = ctypes.c_int
        self.lib = lib

    def arm(self):
        return self.lib.fakecuda_gate_arm() == 0  # -1: a thread is parked already

    def wait_parked(self, timeout_s):
        return bool(self.lib.fakecuda_gate_wait_parked(timeout_s))

    def parked_tid(self):
        return self.lib.fakecuda_gate_parked_tid()

    def open(self):
        self.lib.fakecuda_gate_open()


def use_fake_device(dev):
    """Make the stand-in libcuda's context of device `dev` current on the
    calling thread (the stand-in has devices 0 to 3)."""
    lib = ctypes.CDLL("libcuda.so.1")
    lib.fakecuda_ctx.restype = ctypes.c_void_p
    lib.fakecuda_ctx.argtypes = [ctypes.c_int]
    lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
    lib.cuCtxSetCurrent(lib.fakecuda_ctx(dev))


def run_parked(name, victim, other):
    """Steps 2-4 above for the single-run scripts (interference.py,
    two_devices.py): start thread `victim` (its tuning parks in the gate),
    wait until it parked, run thread `other` to its end, open the gate, join
    the victim.  Exits EXIT_HARNESS with one line when the victim never parks
    or a thread does not end."""
    gate = Gate()
    gate.arm()
    v = threading.Thread(target=victim, name=victim.__name__)
    v.start()
    if not gate.wait_parked(SAFETY_TIMEOUT_S):
        sys.stderr.write(f"repro {name}: harness: thread {v.name} never parked in the gate\n")
        sys.exit(EXIT_HARNESS)
    o = threading.Thread(target=other, name=other.__name__)
    o.start()
    o.join(SAFETY_TIMEOUT_S)
    gate.open()
    v.join(SAFETY_TIMEOUT_S)
    if o.is_alive() or v.is_alive():
        sys.stderr.write(f"repro {name}: harness: a thread did not end within {SAFETY_TIMEOUT_S:.0f} s\n")
        sys.exit(EXIT_HARNESS)


class Worker(threading.Thread):
    """A thread that runs `body()` once and records how it ended."""

    def __init__(self, harness, name, body):
        super().__init__(name=name, daemon=True)  # daemon: a harness failure must never hang the exit
        self.harness = harness
        self.body = body
        self.result = None
        self.exc = None
        self.exc_where = ""
        self.done = threading.Event()
        self.settled = threading.Event()  # done, or waiting in tunerguard / the control lock / a hold
        self.how_settled = None
        self.holder_tids = []  # holder_tid of each tunerguard.serialize_wait seen on this thread

    def settle(self, how):
        if self.how_settled is None:
            self.how_settled = how
        self.settled.set()

    def run(self):
        self.harness._workers_by_ident[threading.get_ident()] = self
        try:
            self.result = self.body()
        except BaseException as e:  # noqa: B902 - everything a thread raises is a finding
            self.exc = e
            tb = traceback.extract_tb(e.__traceback__)
            if tb:
                last = tb[-1]
                self.exc_where = f" (at {os.path.relpath(last.filename, REPRO_DIR)}:{last.lineno} in {last.name})"
            sys.stderr.write(f"repro {self.harness.name}: thread {self.name} raised:\n")
            traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
        finally:
            self.settle("done")
            self.done.set()


class Harness:

    def __init__(self, name, description, flags=()):
        """flags: extra store_true options of the scenario (e.g. "--after-clear")."""
        parser = argparse.ArgumentParser(description=description)
        for flag in flags:
            parser.add_argument(flag, action="store_true")
        parser.add_argument("--control-lock", action="store_true",
                            help="wrap every kernel call in one threading.Lock (the hand-written workaround)")
        parser.add_argument("--expect-serialized", action="store_true",
                            help="(run_repro.py, mode=serialize) every other thread must have waited in "
                            "tunerguard (audit event) while the victim held the tuner")
        parser.add_argument("--verbose", action="store_true")
        self.args = parser.parse_args()
        self.name = name
        self.control_lock = threading.Lock() if self.args.control_lock else None
        self._workers_by_ident = {}
        self.workers = []
        self.serialize_waits = 0
        self.victim = None
        self.others = []
        sys.addaudithook(self._audit)
        self.gate = Gate()

    # -- observation ------------------------------------------------------------------------
    def _audit(self, event, args):
        if event != AUDIT_EVENT:
            return
        self.serialize_waits += 1
        w = self._workers_by_ident.get(threading.get_ident())
        if w is not None:
            w.holder_tids.append(args[0] if args else None)
            w.settle("tunerguard serialize wait")

    def current_worker(self):
        return self._workers_by_ident.get(threading.get_ident())

    def log(self, msg):
        if self.args.verbose:
            sys.stderr.write(f"repro {self.name}: {msg}\n")

    # -- the kernel call, optionally under the control lock ---------------------------------
    def call(self, fn, *args, **kwargs):
        lock = self.control_lock
        if lock is None:
            return fn(*args, **kwargs)
        if not lock.acquire(blocking=False):
            w = self.current_worker()
            if w is not None:
                w.settle("control lock wait")
            lock.acquire()
        try:
            return fn(*args, **kwargs)
        finally:
            lock.release()

    # -- choreography -------------------------------------------------------------------------
    def worker(self, name, body):
        w = Worker(self, name, body)
        self.workers.append(w)
        return w

    def check_serialized(self):
        """With --expect-serialized: each other thread waited in tunerguard, first behind the victim."""
        if not self.args.expect_serialized:
            return
        victim = self.victim
        for w in self.others:
            if w.how_settled != "tunerguard serialize wait":
                self.fail(f"thread {w.name} was not serialized by tunerguard (settled: {w.how_settled})")
            if w.holder_tids[0] != victim.native_id:
                self.fail(f"thread {w.name} waited behind tid {w.holder_tids[0]}, not the victim "
                          f"{victim.name} (tid {victim.native_id})")

    def start_victim(self, victim):
        """Arm the gate, start `victim`, and return once it is parked in its benchmark synchronize."""
        self.victim = victim
        if not self.gate.arm():
            self.harness_error("could not arm the gate: a thread is parked in it already")
        victim.start()
        if not self.gate.wait_parked(SAFETY_TIMEOUT_S):
            if victim.done.is_set() and victim.exc is not None:
                self.harness_error(f"victim {victim.name} raised before it parked: "
                                   f"{type(victim.exc).__name__}: {victim.exc}")
            self.harness_error(f"victim {victim.name} did not park in the gate within {SAFETY_TIMEOUT_S:.0f} s")
        if self.gate.parked_tid() != victim.native_id:
            self.harness_error(f"the gate parked tid {self.gate.parked_tid()}, not the victim "
                               f"{victim.name} (tid {victim.native_id})")
        self.log(f"victim {victim.name} (tid {victim.native_id}) parked in cuCtxSynchronize")

    def start_and_settle(self, others):
        """Start `others` and wait until each has finished or is blocked (never by time alone)."""
        self.others = list(others)
        for w in others:
            w.start()
        for w in others:
            if not w.settled.wait(SAFETY_TIMEOUT_S):
                self.harness_error(f"thread {w.name} neither finished nor waited within {SAFETY_TIMEOUT_S:.0f} s")
            self.log(f"{w.name} settled: {w.how_settled}")

    def open_gate(self):
        self.log("opening the gate")
        self.gate.open()

    def join(self, workers):
        for w in workers:
            w.join(SAFETY_TIMEOUT_S)
            if w.is_alive():
                self.harness_error(f"thread {w.name} still running {SAFETY_TIMEOUT_S:.0f} s after the gate opened")

    def overlap(self, workers):
        """The forced overlap of most scenarios: workers[0] parks in its benchmark, the others
        start and settle, the gate opens, every worker is joined, and none may have raised."""
        self.start_victim(workers[0])
        self.start_and_settle(workers[1:])
        self.open_gate()
        self.join(workers)
        self.check_no_exceptions()

    # -- verdicts -------------------------------------------------------------------------------
    def fail(self, reason):
        sys.stderr.write(f"repro {self.name}: FAIL: {reason}\n")
        sys.exit(EXIT_RACE)  # a normal exit, so tunerguard's at-exit summary still runs

    def harness_error(self, reason):
        sys.stderr.write(f"repro {self.name}: HARNESS ERROR: {reason}\n")
        self.gate.open()  # let a parked victim go; workers are daemons, so none can hold up the exit
        sys.exit(EXIT_HARNESS)

    def check_no_exceptions(self):
        for w in self.workers:
            if w.exc is not None:
                self.fail(f"thread {w.name} raised {type(w.exc).__name__}: {w.exc}{w.exc_where}")
        self.check_serialized()

    def passed(self, detail=""):
        settled = ", ".join(f"{w.name}: {w.how_settled}" for w in self.workers if w.how_settled)
        sys.stdout.write(f"repro {self.name}: PASS{': ' + detail if detail else ''}\n")
        self.log(f"settled: {settled}; serialize waits seen: {self.serialize_waits}")
        sys.exit(EXIT_PASS)
