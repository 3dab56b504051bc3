# race/deep.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
N = 17
parked = threading.Event()
release = threading.Event()
class Tuner(Autotuner):
    def run(self, tag):
        self.nargs = {0: tag}
        try:
            if self.level + 1 < N and tag == "A":
                return tuners[self.level + 1].run(tag)
            if tag == "A":
                return self._bench(tag)      # innermost: benchmarking
            return tag
        finally:
            self.nargs = None
def hook(t, tag):
    parked.set()
    release.wait(20)
tuners = []
for i in range(N):
    x = Tuner(my_kernel, hook); x.level = i; tuners.append(x)
a = threading.Thread(target=lambda: tuners[0].run("A"), name="A")
a.start()
assert parked.wait(20)
tuners[N - 1].run("C")
release.set(); a.join()
print("DONE")
