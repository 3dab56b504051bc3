# replace/setattr_paths.py: run after the prelude in tests/integration/harness.py
import abc, enum
import struct
from triton.runtime.autotuner import Autotuner
class M(type):
    def __setattr__(cls, n, v):
        super().__setattr__(n, v)
class C(metaclass=M):
    pass
C.x = 1
class E(enum.Enum):
    A = 1
E.extra = 2
class A(abc.ABC):
    pass
A.y = 3
type.__setattr__(A, "z", 4)
class P:
    pass
type.__setattr__(P, "w", 5)
try:
    object.__setattr__(P, "v", 6)
    print("OBJECT allowed")
except TypeError as e:
    print("OBJECT", e)
print("VALUES", C.x, E.extra, A.y, A.z, P.w)
class MA(type):
    def __setattr__(cls, n, v):
        super().__setattr__(n, v)
class Sub(Autotuner, metaclass=MA):
    pass
def mine(self, *a, **k):
    return "mine"
Sub.run = mine
print("SUB", Sub(my_kernel).run(1), is_guarded(Sub))
print("DONE")
