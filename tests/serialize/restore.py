"""Monkey-patch and restore a guarded method, as patch/unpatch code does:
`orig = Tuner.run; Tuner.run = patched; ...; Tuner.run = orig`.  The program
must behave exactly as without tunerguard: every call binds to the instance."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

t = Tuner("k")
orig = Tuner.run
calls = []


def patched(self, body):
    calls.append("patched")
    return orig(self, body)


Tuner.run = patched
r1 = t.run(lambda: 1)
Tuner.run = orig
r2 = t.run(lambda: 2)
r3 = Tuner.run(t, lambda: 3)


class Sub(Tuner):
    def run(self, body):
        return super().run(body) + 10


r4 = Sub("s").run(lambda: 4)
ok = (r1, r2, r3, r4, calls) == (1, 2, 3, 14, ["patched"])
print("results", r1, r2, r3, r4, calls)
sys.exit(0 if ok else 1)
