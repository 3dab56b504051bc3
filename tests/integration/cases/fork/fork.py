# fork/fork.py: run after the prelude in tests/integration/harness.py
import warnings
warnings.simplefilter("ignore", DeprecationWarning)   # 3.12+: fork with threads
from triton.runtime.autotuner import Autotuner
tuner = Autotuner(my_kernel)
entered = threading.Event(); release = threading.Event()
def hook(t, tag, *rest):
    if tag == "victim":
        entered.set(); release.wait()
tuner.hook = hook
th = threading.Thread(target=tuner.run, args=("victim",)); th.start()
entered.wait()
pid = os.fork()
if pid == 0:
    ok = tuner.run("child") == "ok"
    tuner.run("child2")
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
print("CHILD_STATUS", status)
release.set(); th.join()
print("DONE")
