"""Shared by the lifecycle test programs (run as children, with LD_PRELOAD
and TUNERGUARD_OPTIONS in their environment): the fixture on sys.path, a
record of tunerguard's "tunerguard.serialize_wait" audit events per thread,
and a bounded wait that fails the program instead of hanging."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))

T = 20.0  # every wait is bounded: a hang is a failure, not a stuck ctest
waits = []          # names of threads that blocked in tunerguard
_wait_cbs = {}      # thread name -> callable run when that thread is about to block


def _audit(event, args):
    if event == "tunerguard.serialize_wait":
        name = threading.current_thread().name
        waits.append(name)
        cb = _wait_cbs.pop(name, None)
        if cb:
            cb()


sys.addaudithook(_audit)


def on_wait(thread_name, fn):
    _wait_cbs[thread_name] = fn


def must(ev, what):
    if not ev.wait(T):
        print("TIMEOUT waiting for", what, file=sys.stderr, flush=True)
        os._exit(3)


def join(threads):
    for t in threads:
        t.join(T)
    alive = [t.name for t in threads if t.is_alive()]
    if alive:
        print("HUNG threads:", alive, file=sys.stderr, flush=True)
        os._exit(3)


def guarded(cls, name="run"):
    """tunerguard guards the plain function: its trampoline in the function's
    vectorcall slot, or (3.11) a method descriptor in its place."""
    import ctypes, sysconfig
    f = cls.__dict__[name]
    if type(f).__name__ != "function":
        return True
    off = ctypes.c_ssize_t.from_address(id(type(f)) + (5 + (4 if sysconfig.get_config_var('Py_GIL_DISABLED') else 2))
                                    * ctypes.sizeof(ctypes.c_void_p)).value  # after a 2- or 4-word header
    slot = lambda g: ctypes.c_void_p.from_address(id(g) + off).value  # noqa: E731
    return slot(f) != slot(guarded)
