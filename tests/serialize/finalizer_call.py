"""serialize never waits at interpreter finalization: a daemon thread is
inside a tuner (blocked in the program's own wait) when the program ends,
and a module global's __del__, run as the interpreter finalizes, calls the
same tuner.  The daemon can never leave now, so a wait would last until
wait_timeout (600 s); the call must go in at once.  Prints "del ok" from
the finalizer; the runner's timeout turns a hang into a failure.

  finalizer_call.py [late]

late: the finalizer is in a reference cycle that only sys holds, so it runs
at the interpreter's last collection, after sys.modules is gone."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
from tgfix.tuners import Tuner  # noqa: E402

# The daemon's frames must not hold __main__'s globals (they would keep g
# alive past finalization): its body lives in a namespace of its own.
ns = {}
exec("import threading\ninside, never = threading.Event(), threading.Event()\n"
     "def hold():\n    inside.set()\n    never.wait()\n", ns)
tuner = Tuner("finalizer_kernel")
threading.Thread(target=tuner.run, args=(ns["hold"],), name="daemon", daemon=True).start()
ns["inside"].wait()


class Finalizer:
    def __del__(self, write=os.write, tuner=tuner):
        tuner.run(lambda: None)
        write(1, b"del ok\n")


g = Finalizer()
if sys.argv[1:] == ["late"]:
    g.cycle = g
    sys.tunerguard_test_keep = g
    del g
print("main done", flush=True)
