# race/very_deep.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
sys.setrecursionlimit(5000)
tuner = Autotuner(my_kernel)
entered = threading.Event()
release = threading.Event()
def hook(t, tag, *rest):
    if tag == "victim":
        entered.set()
        release.wait(20)
tuner.hook = hook
def descend(n):
    return descend(n - 1) if n else tuner.run("victim")
th = threading.Thread(target=descend, args=(400,), name="victim")
th.start()
assert entered.wait(20)
tuner.run("other")
release.set()
th.join()
print("DONE")
