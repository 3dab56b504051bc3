# fork/fork_after_race.py: run after the prelude in tests/integration/harness.py
import warnings
warnings.simplefilter("ignore", DeprecationWarning)
from triton.runtime.autotuner import Autotuner
race_once(Autotuner(my_kernel))
sys.stdout.flush(); sys.stderr.flush()
pid = os.fork()
if pid == 0:
    # the child reported nothing: its stderr goes to a file we inspect (a
    # log opened for appending, which tunerguard would write to)
    fd = os.open("child_stderr.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    sys.exit(0)      # normal exit: finalisation and destructors run
_, status = os.waitpid(pid, 0)
print("CHILD_EXIT", os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)
print("DONE")
