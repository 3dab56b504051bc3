"""Subinterpreters are not supported: tunerguard must leave them alone and say
so in one line, once per process, while the main interpreter stays guarded.

Two target modules, tglife.pair_a importing tglife.pair_b while it executes
(the shape that kept a module pending across audit events), are imported in
two legacy subinterpreters (_testcapi.run_in_subinterp, 3.9+) and, where the
module exists, an own-GIL one (_xxsubinterpreters 3.12 / _interpreters 3.13).
Then the main interpreter imports them: its classes are guarded and a forced
race there is detected.  Prints SUB <guarded a> <guarded b> per subinterp."""
import importlib
import os
import sys

from common import guarded
from fork_race_child_lib import race

import _testcapi  # noqa: E402

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture")
CODE = ("import sys; sys.path.insert(0, %r)\n"
        "import tglife.pair_a, tglife.pair_b, json, csv\n"
        "g = lambda c: type(c.__dict__['run']).__name__ != 'function'\n"
        "print('SUB', g(tglife.pair_a.A), g(tglife.pair_b.B), flush=True)\n"
        "tglife.pair_a.A().run(lambda: None)\n") % FIX

for _ in range(2):
    assert _testcapi.run_in_subinterp(CODE) == 0
for name in ("_interpreters", "_xxsubinterpreters"):
    try:
        m = importlib.import_module(name)
    except ImportError:
        continue
    iid = m.create()
    m.run_string(iid, CODE) if name == "_xxsubinterpreters" else m.exec(iid, CODE)
    m.destroy(iid)
    break

import tglife.pair_a  # noqa: E402
import tglife.pair_b  # noqa: E402

print("MAIN", guarded(tglife.pair_a.A), guarded(tglife.pair_b.B), flush=True)
race(tglife.pair_a.A())
raise SystemExit(0 if guarded(tglife.pair_a.A) and guarded(tglife.pair_b.B) else 1)
