"""A race, then (with argv[1] == "segv") a segfault a moment later.

Run under the preload, e.g.
  TUNERGUARD_OPTIONS=trace=1:log_path=/tmp/x/tg LD_PRELOAD=build/libtunerguard.so python3 tests/fatal/race_segv.py segv
Expected: dies by SIGSEGV (status 139 from a shell); /tmp/x/tg.<pid>.txt holds the race report, then
"WARNING: tunerguard: fatal signal SIGSEGV", a native stack, the tuner state, the Python stack with
race_segv.py in it, and the SUMMARY/fence; /tmp/x/tg.<pid>.trace.json passes
tests/unit/check_trace.py --truncated (with --expect flows=1)."""
import ctypes
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration", "fixtures"))
from triton.runtime.autotuner import Autotuner  # noqa: E402

inside = threading.Event()
go = threading.Event()


def hook(self, *a):
    if threading.current_thread().name == "holder":
        inside.set()
        go.wait(5)


def matmul_kernel(x):
    return x


tuner = Autotuner(matmul_kernel, hook)
holder = threading.Thread(target=tuner.run, args=(1,), name="holder")
holder.start()
inside.wait(5)
threading.Thread(target=lambda: (tuner.run(2), go.set()), name="entering").start()
time.sleep(0.2)
go.set()
holder.join()
if len(sys.argv) > 1 and sys.argv[1] == "segv":
    ctypes.string_at(0)
