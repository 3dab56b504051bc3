# replace/replaced_same_function_again.py: run after the prelude in tests/integration/harness.py
with open("patchmod.py", "w") as f:
    f.write("class T:\n    def run(self, x):\n        return x\n")
sys.path.insert(0, ".")
import patchmod
T = patchmod.T
orig = T.__dict__["run"]
def patched(self, x):
    return orig(self, x) * 2
for i in range(300):
    T.run = patched
    assert T().run(1) == 2
    T.run = orig
T.run = patched
print("GUARDED", is_guarded(T), T().run(2))
print("DONE")
