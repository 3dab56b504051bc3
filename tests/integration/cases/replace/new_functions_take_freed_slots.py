# replace/new_functions_take_freed_slots.py: run after the prelude in tests/integration/harness.py
from unittest import mock
with open("patchmod2.py", "w") as f:
    f.write("class T:\n    def run(self, x):\n        return x\n")
sys.path.insert(0, ".")
import patchmod2
T = patchmod2.T
for i in range(300):
    with mock.patch.object(T, "run", new=lambda self, x, i=i: x + i):
        assert T().run(1) == 1 + i
        guarded = is_guarded(T)
print("LAST_GUARDED", guarded)
for i in range(300):  # each assignment frees the function before it: its slot is the one free
    T.run = lambda self, x, i=i: x - i
    assert T().run(1) == 1 - i
print("PLAIN_GUARDED", is_guarded(T))
print("MINOR", sys.version_info[1])
print("DONE")
