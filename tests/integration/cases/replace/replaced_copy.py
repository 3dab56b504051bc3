# replace/replaced_copy.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
def my_run(self, *args, **kwargs):
    """The program's own copy of run (GPTQModel's nogil patcher): nargs kept on self."""
    self.nargs = dict(enumerate(args))
    self.counter = 0  # reset_to_zero
    try:
        self._bench(*args)
        self.counter += 1
        return len(self.nargs), self.counter
    finally:
        self.nargs = None
Autotuner.run = my_run  # before the first call
tuner = Autotuner(my_kernel)
errors, results = [], []
def call(tag):
    try:
        results.append(tuner.run(tag))
    except TypeError as e:
        errors.append(e)
entered, release = threading.Event(), threading.Event()
def hook(t, tag, *rest):
    if tag == "victim":  # inside the tuning, until another thread comes in
        entered.set()
        release.wait()
tuner.hook = hook
victim = threading.Thread(target=call, args=("victim",))
victim.start()
entered.wait()
_wait_callbacks.append(release.set)  # serialize: the first thread to wait lets it go on
others = [threading.Thread(target=call, args=("other%d" % i,)) for i in range(5)]
for th in others:
    th.start()
for th in others:
    th.join()
release.set()
victim.join()
print("TYPEERRORS", len(errors), "RESULTS", sorted(set(results)), len(results))
print("DONE")
