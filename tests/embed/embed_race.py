"""Run by embed_host (PyRun_SimpleString or PyRun_SimpleFile) under the
preload: two threads in one stand-in Autotuner (tests/integration/fixtures),
the overlap forced with events, no sleeps.

    embed_race.py FIXTURES detect|serialize|quiet [importlib]

The victim parks inside run() (in _bench's hook); the main thread calls run()
on the same tuner.  detect: both calls overlap (tunerguard reports it);
serialize: the main thread's call waits until the victim's ended (the
"tunerguard.serialize_wait" audit event, raised just before it blocks, lets
the victim finish); quiet: no target imported, threads that share nothing.
importlib: the target imported with importlib.import_module (which raises no
"import" audit event for it).  Prints GUARDED and ORDER lines for the
driver."""
import sys
import threading


def quiet():
    import json
    out = []
    threads = [threading.Thread(target=lambda: out.append(json.dumps([1]))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("QUIET", len(out))


def is_guarded(cls, plain):
    """A method descriptor put on the class (3.11), or the function itself
    with tunerguard's trampoline in its vectorcall slot (plain: a function
    nobody guards, for its slot's usual value)."""
    import ctypes, sysconfig

    def vectorcall_of(f):
        off = ctypes.c_ssize_t.from_address(id(type(f)) + (5 + (4 if sysconfig.get_config_var('Py_GIL_DISABLED') else 2))
                                    * ctypes.sizeof(ctypes.c_void_p)).value  # after a 2- or 4-word header
        return ctypes.c_void_p.from_address(id(f) + off).value
    v = vars(cls)["run"]
    return type(v).__name__ == "method_descriptor" or vectorcall_of(v) != vectorcall_of(plain)


def race(mode, how):
    release = threading.Event()

    def audit(event, args):
        if event == "tunerguard.serialize_wait":
            release.set()  # the main thread is about to wait: the victim may finish
    sys.addaudithook(audit)
    if how == "importlib":
        import importlib
        Autotuner = importlib.import_module("triton.runtime.autotuner").Autotuner
    else:
        from triton.runtime.autotuner import Autotuner  # the target's import: tunerguard arms here

    def my_kernel(*args, **kwargs):
        return "ok"
    order = []
    entered = threading.Event()

    def hook(tuner, tag, *rest):
        order.append(tag + ":start")
        if tag == "victim":
            entered.set()
            release.wait(30)
        order.append(tag + ":end")
    tuner = Autotuner(my_kernel, hook)
    victim = threading.Thread(target=tuner.run, args=("victim",), name="victim")
    victim.start()
    entered.wait(30)
    tuner.run("other")  # the victim is inside (serialize: this call waits for it)
    release.set()
    victim.join(30)
    print("GUARDED", is_guarded(Autotuner, my_kernel))
    print("ORDER", ",".join(order))


sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "quiet":
    quiet()
else:
    race(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "import")
