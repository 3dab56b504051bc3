# exc_link/two_waits.py: run after the prelude in tests/integration/harness.py
import time
from triton.runtime.autotuner import Autotuner
inside = threading.Event()
def hook(t, tag, *rest):
    if tag == "victim":
        inside.set()
        end = time.monotonic() + 20
        while len(_wait_events) < 2 and time.monotonic() < end:
            sum(range(1000))  # running, the GIL taken and given back
tuner = Autotuner(my_kernel, hook)
th = threading.Thread(target=tuner.run, args=("victim",), name="victim")
th.start()
inside.wait()
tuner.run("other")
th.join()
print("WAITS", len(_wait_events))
