# descriptors/stderr_same_fs.py: run after the prelude in tests/integration/harness.py
st_start = os.stat("start.txt")
data = os.open("data.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(data, b"DATA")
os.dup2(data, 2)
st = os.fstat(2)
print("SAME_DEV", st.st_dev == st_start.st_dev, "SAME_INO", st.st_ino == st_start.st_ino)
from triton.runtime.autotuner import Autotuner
race_once(Autotuner(my_kernel))
print("DONE pid", os.getpid())
