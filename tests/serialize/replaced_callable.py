"""Tuner.run replaced by a callable object (no __code__, no __qualname__):
tunerguard, looking at the replacement, must not call into Python with an
AttributeError still set.  The replacement's __getattribute__ runs len([])
during each look-up: with an error pending, CPython 3.9-3.11 make that
`SystemError: ... returned a result with an exception set`.  Exit 0 when
the call works and no look-up saw a pending error."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

t = Tuner("replaced_callable_kernel")
orig = Tuner.run
seen = []


class CallableRun:
    def __call__(self, inst, body):
        return orig(inst, body)

    def __getattribute__(self, name):
        if name in ("__code__", "__qualname__"):
            try:
                len([])
            except SystemError as e:
                seen.append((name, str(e)))
            raise AttributeError(name)
        return object.__getattribute__(self, name)


Tuner.run = CallableRun()
assert Tuner.run(t, lambda: "ok") == "ok"  # not bound: the instance passed explicitly
print("pending errors seen:", seen)
sys.exit(1 if seen else 0)
