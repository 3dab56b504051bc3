# replace/target_class_refuses_setattr.py: run after the prelude in tests/integration/harness.py
with open("mymod.py", "w") as f:
    f.write("class Meta(type):\n"
            "    def __setattr__(cls, name, value):\n"
            "        raise TypeError('frozen')\n"
            "class Frozen(metaclass=Meta):\n    def run(self):\n        return 5\n"
            "class Open:\n    def run(self):\n        return 6\n")
sys.path.insert(0, ".")
import mymod
print("FROZEN", is_guarded(mymod.Frozen), mymod.Frozen().run())
print("OPEN", is_guarded(mymod.Open), mymod.Open().run())
class Sub(mymod.Frozen):
    def run(self):
        return 7
print("SUB", is_guarded(Sub), Sub().run())
try:
    mymod.Frozen.run = lambda self: 8
except TypeError as e:
    print("REFUSED", e)
