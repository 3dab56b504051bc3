"""No race: one tuned call dies inside.  A subclass of Triton's Autotuner
(its tuning methods marked) whose run never enters _bench: in detect mode at
verbosity 0 the call registers no session in the tuner table (guard/session.c,
"The unregistered session").  The fatal record must still name its tuner;
the instance's address is printed first, for the check."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration", "fixtures"))
from triton.runtime.autotuner import Autotuner  # noqa: E402


class Tuned(Autotuner):
    def run(self, *args, **kwargs):
        self.nargs = dict(enumerate(args))
        ctypes.string_at(0)


tuned = Tuned(lambda x: x)
print("instance", hex(id(tuned)), flush=True)
tuned.run(1)
