# replace/targets.py: run after the prelude in tests/integration/harness.py
with open("mymod.py", "w") as f:
    f.write("class Base:\n    def run(self):\n        return 1\n"
            "class Sub(Base):\n    pass\n"
            "class S2:\n    @staticmethod\n    def run():\n        return 2\n")
sys.path.insert(0, ".")
import mymod
print("BASE_GUARDED", is_guarded(mymod.Base))
