# replace/guard_lifetime.py: run after the prelude in tests/integration/harness.py
import gc, weakref
with open("lifemod.py", "w") as f:
    f.write("class Base:\n    def run(self, x):\n        return x\n")
sys.path.insert(0, ".")
import lifemod
def make():
    class Sub(lifemod.Base):
        def run(self, x):
            return x + 1
    return Sub
Sub = make()
print("SUB_GUARDED", is_guarded(Sub), Sub().run(1))
print("MINOR", sys.version_info[1])
if sys.version_info[:2] == (3, 11):  # a method descriptor, no weak reference to it
    wc = weakref.ref(Sub)
    del Sub
    gc.collect()
    print("CLASS_GONE", wc() is None)
    Sub = make()
    bound, wc = Sub().run, weakref.ref(Sub)
    del Sub
    gc.collect()
    print("BOUND", wc() is None, bound(2))
    del bound
    gc.collect()
    print("BOUND_GONE", wc() is None)
    print("DONE")
    sys.exit(0)
wc, wf = weakref.ref(Sub), weakref.ref(Sub.__dict__["run"])
del Sub
gc.collect()
print("CLASS_GONE", wc() is None, "FUNCTION_GONE", wf() is None)
Sub = make()
kept = Sub.__dict__["run"]
wc = weakref.ref(Sub)
del Sub
gc.collect()
print("KEPT", wc() is None, kept(object(), 2))
print("DONE")
