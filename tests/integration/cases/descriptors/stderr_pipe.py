# descriptors/stderr_pipe.py: run after the prelude in tests/integration/harness.py
import fcntl, signal
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
r, w = os.pipe()
if FULL:
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
else:
    os.close(r)
os.dup2(w, 2)
from triton.runtime.autotuner import Autotuner
race_once(Autotuner(my_kernel), serialize=SERIALIZE)
print("DONE pid", os.getpid(), flush=True)
