# replace/target_non_ascii.py: run after the prelude in tests/integration/harness.py
with open("tünmod.py", "w", encoding="utf-8") as f:
    f.write("class Tunér:\n    def rün(self):\n        return 7\n")
sys.path.insert(0, ".")
import tünmod
print("GUARDED", is_guarded(tünmod.Tunér, "rün"), tünmod.Tunér().rün())
