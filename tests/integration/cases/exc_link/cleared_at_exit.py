# exc_link/cleared_at_exit.py: run after the prelude in tests/integration/harness.py
from cleartuner import ClearTuner
errors, notes = {}, {}
events = {(t, p): threading.Event() for t in ("fast", "B", "C") for p in ("entered", "bench", "to_bench", "go")}
def gate(tag, phase):
    events[(tag, phase)].set()
    if tag != "fast" and phase == "entered":  # not benchmarking until both are in
        events[(tag, "to_bench")].wait(20)
    else:
        events[(tag, "go")].wait(20)
tuner = ClearTuner(gate)
def call(tag):
    try:
        tuner.run(tag)
    except BaseException as e:
        errors[tag] = type(e).__name__
        notes[tag] = [n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")]
slots = {}
fast = start_in("fast", lambda: call("fast"), lambda s: True, slots, events[("fast", "entered")])
b = start_in("B", lambda: call("B"), lambda s: s != slots["fast"] and s <= 5, slots, events[("B", "entered")])
c = start_in("C", lambda: call("C"), lambda s: s != slots["fast"] and s > slots["B"], slots, events[("C", "entered")])
for tag in ("B", "C"):
    events[(tag, "to_bench")].set()
    assert events[(tag, "bench")].wait(20), tag
events[("fast", "go")].set()
fast.join()
events[("C", "go")].set()
c.join()
events[("B", "go")].set()
b.join()
print("ERRORS", sorted(errors.items()), "NOTES", sorted((k, len(v)) for k, v in notes.items()),
      "NOTED", int(sys.version_info >= (3, 11)))
