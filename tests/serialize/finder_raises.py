"""A finder after tunerguard's that raises for a target module: the import
fails with that finder's exception, as it does without tunerguard (our
finder asks the finders after it for a target's spec; it swallowed the
exception before and the import went on through the next finder).  Exit 0
when `import tgfix.tuners` raised the finder's ImportError."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))


class Blocking:
    def find_spec(self, name, path=None, target=None):
        if name == "tgfix.tuners":
            raise ImportError("blocked by the program's finder")
        return None


pos = 1 if type(sys.meta_path[0]).__module__ == "tunerguard" else 0  # right after ours, if there
sys.meta_path.insert(pos, Blocking())
try:
    import tgfix.tuners  # noqa: F401
except ImportError as e:
    print("import failed:", e)
    sys.exit(0 if "blocked by the program's finder" in str(e) else 1)
print("import succeeded")
sys.exit(1)
