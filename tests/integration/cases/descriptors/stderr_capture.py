# descriptors/stderr_capture.py: run after the prelude in tests/integration/harness.py
import tempfile
cap = tempfile.TemporaryFile()
saved = os.dup(2)
os.dup2(cap.fileno(), 2)
from triton.runtime.autotuner import Autotuner
race_once(Autotuner(my_kernel))
os.dup2(saved, 2)
cap.seek(0)
print("CAPTURED", cap.read().decode().count("WARNING: tunerguard"))
print("DONE pid", os.getpid())
