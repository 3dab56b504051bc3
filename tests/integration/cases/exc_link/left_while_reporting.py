# exc_link/left_while_reporting.py: run after the prelude in tests/integration/harness.py
from cleartuner import ClearTuner
sys.setswitchinterval(1000.0)  # the GIL changes hands only where a thread blocks
errors, notes = {}, {}
class Events(dict):
    """One Event per key, whichever thread asks first: defaultdict's
    look-up then insert can make two for one key where threads run at once
    (PYTHON_GIL=0); dict.setdefault inserts or returns in one step."""
    def __missing__(self, key):
        return self.setdefault(key, threading.Event())
ev = Events()
raise_at = set()
def gate(tag, phase):  # parks each thread, by name, where main says
    me = threading.current_thread()._name
    ev[(me, phase)].set()
    ev[(me, phase + "-go")].wait(20)
    if (me, phase) in raise_at:
        raise RuntimeError(me + ": its own error")
class Tuner(ClearTuner):
    def run(self, tag):
        self.nargs = {"tag": tag}
        self.gate(tag, "entered")
        ret = tag if tag == "fast" else self._bench(tag)
        self.nargs = None
        return ret
class NamedThread(threading.Thread):
    park = False
    @property
    def name(self):
        if self.park:
            self.park = False
            ev[("holder", "name")].set()
            ev[("holder", "name-go")].wait(20)
        return self._name
    @name.setter
    def name(self, value):
        self._name = value
a, b = Tuner(gate), Tuner(gate)
def call(tuner, tag):
    try:
        tuner.run(tag)
    except BaseException as e:
        name = threading.current_thread()._name
        errors[name] = type(e).__name__
        notes[name] = len([n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")])
def start(name, tuner, tag, cls=threading.Thread):
    th = cls(target=call, args=(tuner, tag), name=name)
    th.start()
    return th
t1, t2 = start("t1", a, "t1"), start("t2", a, "t2")
for name in ("t1", "t2"):
    assert ev[(name, "entered")].wait(20), name
for name in ("t1", "t2"):
    ev[(name, "entered-go")].set()
    assert ev[(name, "bench")].wait(20), name
b1 = start("b1", b, "b1")
assert ev[("b1", "entered")].wait(20)
ev[("b1", "entered-go")].set()
assert ev[("b1", "bench")].wait(20)
NamedThread.park = True
ev[("holder", "entered-go")].set()
holder = start("holder", b, "fast", NamedThread)
assert ev[("holder", "name")].wait(20), "holder's report reading its name"
ev[("fast", "entered-go")].set()
fast = start("fast", a, "fast")  # runs until it waits for the report lock
raise_at.add(("t1", "bench"))
ev[("t1", "bench-go")].set()
t1.join()
ev[("holder", "name-go")].set()
fast.join()
ev[("t2", "bench-go")].set()
t2.join()
ev[("b1", "bench-go")].set()
b1.join()
holder.join()
print("ERRORS", sorted(errors.items()), "NOTES", sorted(notes.items()), "NOTED", int(sys.version_info >= (3, 11)))
