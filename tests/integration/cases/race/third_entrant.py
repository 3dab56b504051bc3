# race/third_entrant.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
parked = {"A": threading.Event(), "B": threading.Event()}
release = threading.Event()
class Tuner(Autotuner):
    def run(self, tag):
        self.nargs = {0: tag}
        try:
            if tag == "A":
                return self._bench(tag)
            if tag == "B":
                self.hook(self, tag)  # a fast path: no _bench
            return tag
        finally:
            self.nargs = None
def hook(t, tag):
    parked[tag].set()
    release.wait(20)
tuner = Tuner(my_kernel, hook)
slots = {}
def enter_parked(tag, fits):
    return start_in(tag, lambda: tuner.run(tag), fits, slots, parked[tag])
a = enter_parked("A", lambda slot: slot > 0)
b = enter_parked("B", lambda slot: slot < slots["A"])
print("SLOTS", slots["A"], slots["B"])
tuner.run("C")
release.set()
a.join(); b.join()
print("DONE pid", os.getpid())
