# exc_link/slotless_raise.py: run after the prelude in tests/integration/harness.py
import collections
from cleartuner import ClearTuner
errors, notes = {}, {}
ev = collections.defaultdict(threading.Event)
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
