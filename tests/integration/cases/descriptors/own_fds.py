# descriptors/own_fds.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
tuner = Autotuner(my_kernel)
race_once(tuner, serialize=SERIALIZE)  # report files open, libunwind used
os.closerange(3, 256)
fin = os.open("in.txt", os.O_RDONLY)
fouts = [os.open("out%d.bin" % i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for i in range(8)]
def enter(t):
    th = threading.Thread(target=t.run, args=("other",))
    th.start(); th.join()
for i in range(3):
    t = Autotuner(my_kernel)
    race_once(t, serialize=SERIALIZE, enter=lambda: enter(t))
print("FDS", fin, fouts[0])
print("IN", os.read(fin, 100).decode())
for fd in [fin] + fouts:
    os.close(fd)
print("DONE pid", os.getpid())
