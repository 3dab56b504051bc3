"""An interpreter that exists before the main interpreter imports its first
target must work afterwards as it does without tunerguard: an Enum class, and
type.__setattr__, type.__delattr__ and type.__new__ (through a metaclass it
made before) on its own classes.  So must one started afterwards, and the
main interpreter stays guarded and detects its race.

  subinterp_before.py before|after

before: an interpreter is started before the import and used after it (PRE),
then another one (NEW).  after: none exists at the import, so the program's
classes are watched (type's slots hooked), and one is started after it (NEW).

The interpreters: 3.14's concurrent.futures.InterpreterPoolExecutor (one
worker, so one interpreter for every task), else _interpreters (3.13) or
_xxsubinterpreters (3.9 to 3.12).  Prints PRE <result>, NEW <result>, MAIN
<guarded a>; a result is "ok" or the error the interpreter raised."""
import importlib
import sys

from common import guarded
from fork_race_child_lib import race

BEFORE = "class M(type):\n    pass\n"
AFTER = ("import enum\n"
         "class E(enum.Enum):\n"
         "    A = 1\n",
         "class C:\n"
         "    pass\n"
         "type.__setattr__(C, 'x', 1)\n"
         "type.__delattr__(C, 'x')\n",
         "class M2(M):\n"
         "    def __new__(mcls, *a):\n"
         "        return super().__new__(mcls, *a)\n"
         "class D(metaclass=M2):\n"
         "    pass\n")


def run_after(interp):
    """AFTER's parts in interp: "ok", or each failing part's error."""
    errors = [e for e in (interp.run(part) for part in AFTER) if e != "ok"]
    return " | ".join(errors) or "ok"


def run_in_main(code):
    """Runs code in the main interpreter's __main__."""
    exec(code, sys.modules["__main__"].__dict__)


class Pool:
    def __init__(self, futures):
        self.ex = futures.InterpreterPoolExecutor(max_workers=1)

    def run(self, code):
        # exec itself is the task: a function of this script's would be
        # found by running the script again in the worker.
        task = "import sys\nexec(%r, sys.modules['__main__'].__dict__)\n" % code
        try:
            self.ex.submit(exec, task, {}).result()
            return "ok"
        except Exception as e:  # the interpreter's error, as the main one sees it
            return "%s: %s" % (type(e).__name__, e)

    def close(self):
        self.ex.shutdown()


class Low:
    def __init__(self, mod):
        self.mod, self.iid = mod, mod.create()

    def run(self, code):
        try:
            if hasattr(self.mod, "run_string"):
                err = self.mod.run_string(self.iid, code)
            else:
                err = self.mod.exec(self.iid, code)
        except Exception as e:  # 3.12: RunFailedError
            return "%s: %s" % (type(e).__name__, e)
        return "ok" if err is None else str(getattr(err, "formatted", err))

    def close(self):
        self.mod.destroy(self.iid)


def start():
    try:
        import concurrent.futures as futures
        if hasattr(futures, "InterpreterPoolExecutor"):
            return Pool(futures)
    except ImportError:
        pass
    for name in ("_interpreters", "_xxsubinterpreters"):
        try:
            return Low(importlib.import_module(name))
        except ImportError:
            continue
    print("SKIP no subinterpreters", flush=True)
    raise SystemExit(0)


pre = start() if sys.argv[1] == "before" else None
if pre:
    assert pre.run(BEFORE) == "ok"

import tglife.pair_a  # noqa: E402  (the first guard: type is watched)

if pre:
    print("PRE", run_after(pre), flush=True)
    pre.close()
new = start()
assert new.run(BEFORE) == "ok"
print("NEW", run_after(new), flush=True)
new.close()
run_in_main(BEFORE + "".join(AFTER))
print("MAIN", guarded(tglife.pair_a.A), flush=True)
race(tglife.pair_a.A())
