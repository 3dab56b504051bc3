# descriptors/closed_stderr.py: run after the prelude in tests/integration/harness.py
mine = os.open("mine.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(mine, b"mine\n")
from triton.runtime.autotuner import Autotuner
race_once(Autotuner(my_kernel))
print("FD", mine)
print("DONE pid", os.getpid())
