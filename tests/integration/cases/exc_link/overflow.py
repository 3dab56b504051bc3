# exc_link/overflow.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
N = 10
errors, notes = [], []
all_in = threading.Barrier(N, timeout=20)
def hook(t, tag, *rest):
    all_in.wait()
tuner = Autotuner(None, hook)  # fn None: the tuner's _bench raises TypeError
def call(i):
    try:
        tuner.run(i)
    except BaseException as e:
        errors.append(type(e).__name__)
        notes.extend(n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:"))
ts = [threading.Thread(target=call, args=(i,), name="t%d" % i) for i in range(N)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("ERRORS", len(errors), sorted(set(errors)), "NOTES", len(notes), "NOTED", int(sys.version_info >= (3, 11)))
