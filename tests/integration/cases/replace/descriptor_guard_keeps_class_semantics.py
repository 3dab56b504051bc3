# replace/descriptor_guard_keeps_class_semantics.py: run after the prelude in tests/integration/harness.py
import abc
with open("semmod.py", "w") as f:
    f.write("class Base:\n    def run(self, x):\n        return x\n")
sys.path.insert(0, ".")
import semmod
class Abstract(semmod.Base, abc.ABC):
    @abc.abstractmethod
    def run(self, x):
        """An abstract run."""
class Concrete(Abstract):
    def run(self, x):
        """Runs x."""
        return x + 1
try:
    Abstract()
    print("ABSTRACT instantiated")
except TypeError:
    print("ABSTRACT refused")
print("ABSTRACTS", sorted(Abstract.__abstractmethods__), sorted(Concrete.__abstractmethods__))
print("DOC", Concrete.run.__doc__, Concrete().run(1), is_guarded(Concrete))
seen = []
class Meta(type):
    def __setattr__(cls, name, value):
        seen.append(name)
        if callable(value) and not getattr(value, "wrapped_by_meta", False):
            inner = value
            def value(self, *a, **k):
                return inner(self, *a, **k)
            value.wrapped_by_meta = True
        super().__setattr__(name, value)
class Metaed(semmod.Base, metaclass=Meta):
    def run(self, x):
        return x * 2
m = Metaed()
results = {m.run(i) for i in range(1100)}
print("META", seen, sorted(results)[:3], is_guarded(Metaed))
print("DONE")
