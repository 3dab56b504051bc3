# descriptors/stderr_taken.py: run after the prelude in tests/integration/harness.py
import signal
os.close(2)
data = os.open("data.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(data, b"DATA")
from triton.runtime.autotuner import Autotuner
race_once(Autotuner(my_kernel))
print("FD", data)
if APPEND_LOG:
    log = os.open("log.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 2)
print("DONE pid", os.getpid())
