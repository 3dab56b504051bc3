# race/warmup.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
parked = {"A": threading.Event(), "B": threading.Event()}
release = threading.Event()
class Other(Autotuner):
    def warmup(self, *a, **k):
        return "compiled"            # real Triton: self.fn.warmup (compiles), no _bench
other = Other(my_kernel)
class Tuner(Autotuner):
    def run(self, tag):
        self.nargs = {0: tag}
        try:
            if tag == "A":
                other.warmup(tag)    # a warmup session nested in this one, over by now
                parked["A"].set(); release.wait(20)
                return tag
            if tag == "B":
                return self._bench(tag)
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
a = enter_parked("A", lambda slot: slot == 0)  # found first
b = enter_parked("B", lambda slot: True)
print("SLOTS", slots["A"], slots["B"])
tuner.run("C")
release.set()
a.join(); b.join()
print("DONE")
