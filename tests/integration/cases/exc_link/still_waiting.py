# exc_link/still_waiting.py: run after the prelude in tests/integration/harness.py
import time
from triton.runtime.autotuner import Autotuner
inside, never, waiting = threading.Event(), threading.Event(), threading.Event()
began = []
_wait_callbacks.append(lambda: (began.append(time.monotonic()), waiting.set()))
def hook(t, tag, *rest):
    if tag == "holder":
        inside.set()
        never.wait(60)
tuner = Autotuner(my_kernel, hook)
threading.Thread(target=tuner.run, args=("holder",), name="holder", daemon=True).start()
inside.wait()
threading.Thread(target=tuner.run, args=("waiter",), name="waiter", daemon=True).start()
assert waiting.wait(20)
threading.Event().wait(0.3)
print("WAITED AT LEAST %.3f" % (time.monotonic() - began[0]), flush=True)
