# exc_link/two_waits.py: run after the prelude in tests/integration/harness.py
import time
from triton.runtime.autotuner import Autotuner
# where the GIL is off there is no turn (guard/gil_state.h): one wait, the tuner's
WANT = 1 if hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled() else 2
inside = threading.Event()
def hook(t, tag, *rest):
    if tag == "victim":
        inside.set()
        end = time.monotonic() + 20
        while len(_wait_events) < WANT and time.monotonic() < end:
            sum(range(1000))  # running, the GIL taken and given back
tuner = Autotuner(my_kernel, hook)
th = threading.Thread(target=tuner.run, args=("victim",), name="victim")
th.start()
inside.wait()
tuner.run("other")
th.join()
print("WAITS", len(_wait_events), "WANT", WANT)
