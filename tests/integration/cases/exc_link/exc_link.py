# exc_link/exc_link.py: run after the prelude in tests/integration/harness.py
import functools, signal
from triton.runtime.autotuner import Autotuner
notes, errors = [], []
def catch(fn, *args):
    try:
        fn(*args)
    except BaseException as e:
        errors.append(type(e).__name__)
        notes.extend(n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:"))
class Sub(Autotuner):  # the program's own subclass: its run is guarded, Triton's code raises
    def run(self, *args, **kwargs):
        return super().run(*args, **kwargs)
tuner = CLS(FN)
entered, release = threading.Event(), threading.Event()
def hook(t, tag, *rest):
    if tag == "victim":
        entered.set()
        release.wait()
    elif tag == "own":
        {}["missing"]  # the program's own KeyError
tuner.hook = hook
th = threading.Thread(target=catch, args=(tuner.run, "victim"), name="victim")
th.start()
entered.wait()
for i in range(CALLS):
    catch(tuner.run, "TAG")
release.set()
th.join()
print("ERRORS", sorted(errors), "NOTES", len(notes), "NOTED", int(sys.version_info >= (3, 11)))
