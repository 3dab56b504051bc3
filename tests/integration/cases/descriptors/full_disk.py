# descriptors/full_disk.py: run after the prelude in tests/integration/harness.py
import glob, resource, signal
from triton.runtime.autotuner import Autotuner
race_once(Autotuner(my_kernel))
sizes = [os.path.getsize(f) for f in glob.glob("tg.*")]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
lim = max(sizes) + 700
resource.setrlimit(resource.RLIMIT_FSIZE, (lim, lim))
for i in range(4):
    race_once(Autotuner(my_kernel))
print("DONE pid", os.getpid())
