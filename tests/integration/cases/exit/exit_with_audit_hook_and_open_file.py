# exit/exit_with_audit_hook_and_open_file.py: run after the prelude in tests/integration/harness.py
left_open = open("left_open.bin", "wb")
from triton.runtime.autotuner import Autotuner
Autotuner(my_kernel).run("one")
class Later(Autotuner):  # a class made and a class attribute set: both hooks in use
    pass
Later.extra = 1
print("DONE")
