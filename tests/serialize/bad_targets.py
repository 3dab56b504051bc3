"""targets= entries that do not name what they should, run under
PYTHONMALLOC=debug (freed memory is overwritten at once):

- tgfix.nested:leaf.run names a module (leaf) where a class belongs: one
  line says it is not a class, the function runs unguarded and unchanged
  (it crashed the call before: a method descriptor made on a module);
- tgfix.lazy:A.run and :B.run, a module that replaces itself in sys.modules
  while A is looked up: both classes guarded, no read of the freed module
  (B's look-up read it before, and crashed or said B was missing).

Exit 0 when the program's results are right; the harness reads stderr."""
import importlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
import tgfix.nested  # noqa: E402

assert tgfix.nested.leaf.run(5) == ("called", 5)
importlib.import_module("tgfix.lazy")
m = sys.modules["tgfix.lazy"]
assert m.A().run() == "A" and m.B().run() == "B"


def guarded(f):
    """A method descriptor (3.11), or the function with tunerguard's trampoline in its vectorcall slot."""
    import ctypes, sysconfig
    if type(f).__name__ == "method_descriptor":
        return "guard"
    off = ctypes.c_ssize_t.from_address(id(type(f)) + (5 + (4 if sysconfig.get_config_var('Py_GIL_DISABLED') else 2))
                                    * ctypes.sizeof(ctypes.c_void_p)).value  # after a 2- or 4-word header
    slot = lambda g: ctypes.c_void_p.from_address(id(g) + off).value  # noqa: E731
    return "guard" if slot(f) != slot(guarded) else type(f).__name__


print("guarded:", guarded(m.A.__dict__["run"]), guarded(m.B.__dict__["run"]))
