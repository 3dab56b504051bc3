# exc_link/slotless_raise.py: run after the prelude in tests/integration/harness.py
from cleartuner import ClearTuner
errors, notes = {}, {}
class Events(dict):
    """One Event per key, whichever thread asks first: defaultdict's
    look-up then insert can make two for one key where threads run at once
    (PYTHON_GIL=0); dict.setdefault inserts or returns in one step."""
    def __missing__(self, key):
        return self.setdefault(key, threading.Event())
ev = Events()
def gate(tag, phase):  # parks each thread, by name, where main says
    me = threading.current_thread().name
    ev[(me, phase)].set()
    ev[(me, phase + "-go")].wait(20)
tuner = ClearTuner(gate)
def call(tag):
    try:
        tuner.run(tag)
    except BaseException as e:
        name = threading.current_thread().name
        errors[name] = type(e).__name__
        notes[name] = len([n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")])
def start(name, tag):
    th = threading.Thread(target=call, args=(tag,), name=name)
    th.start()
    assert ev[(name, "entered")].wait(20), name
    return th
fillers = [start("fill%d" % i, "fast") for i in range(8)]
first = start("tuner", "tuner")
ev[("tuner", "entered-go")].set()
assert ev[("tuner", "bench")].wait(20)
ev[("fill0", "entered-go")].set()
fillers[0].join()
ev[("tuner", "bench-go")].set()
first.join()
for i, th in enumerate(fillers):
    ev[("fill%d" % i, "entered-go")].set()
    th.join()
print("ERRORS", sorted(errors.items()), "NOTES", sorted(notes.items()), "NOTED", int(sys.version_info >= (3, 11)))
