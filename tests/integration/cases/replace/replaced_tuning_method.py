# replace/replaced_tuning_method.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
inside, go = threading.Event(), threading.Event()
def my_bench(self, *args, **kwargs):
    if args and args[0] == "victim":
        inside.set()
        go.wait()
    return self.fn(*args, **kwargs)
Autotuner._bench = my_bench
tuner = Autotuner(my_kernel)
victim = threading.Thread(target=tuner.run, args=("victim",))
victim.start()
inside.wait()
other = threading.Thread(target=tuner.run, args=("other",))
other.start()
other.join()
go.set()
victim.join()
print("DONE")
