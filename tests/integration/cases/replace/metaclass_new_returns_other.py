# replace/metaclass_new_returns_other.py: run after the prelude in tests/integration/harness.py
import struct
from triton.runtime.autotuner import Autotuner
class M(type):
    def __new__(m, n, b, ns):
        if n == "X":  # where a class keeps its MRO, a wild pointer
            return b"\0" * 312 + struct.pack("Q", 0x4141414141414141) + b"\0" * 80
        return super().__new__(m, n, b, ns)
class Base(Autotuner, metaclass=M):
    pass
x = type("X", (Base,), {})
print("MADE", type(x).__name__, len(x), is_guarded(Autotuner))
