# race/tuned_key_overlap.py: run after the prelude in tests/integration/harness.py
# A model of Triton's Autotuner.run on a tuned key: self.nargs written on
# every call, the key's config looked up (no _bench), the launch, then
# self.nargs = None.  The victim parks inside its launch (an event); the main
# thread calls the tuned key three times meanwhile, from one line.
from triton.runtime.autotuner import Autotuner
class Tuner(Autotuner):
    cache = None
    def run(self, tag):
        self.nargs = {0: tag}
        try:
            if self.cache is None:
                self._bench(tag)            # tuned once, alone, before the threads start
                self.cache = {"key": "config"}
            call = {**self.nargs, "config": self.cache["key"]}
            if tag == "victim":
                launched.set()
                release.wait(20)            # inside its launch
            return self.fn(call)
        finally:
            self.nargs = None
launched, release = threading.Event(), threading.Event()
tuner = Tuner(my_kernel)
tuner.run("warm")
th = threading.Thread(target=tuner.run, args=("victim",), name="victim")
th.start()
launched.wait(20)
for i in range(3):
    tuner.run("other")              # one call site, three overlaps
release.set()
th.join()
is_gil = getattr(sys, "_is_gil_enabled", None)
print("GIL", int(is_gil()) if is_gil else 1)
print("DONE pid", os.getpid())
