"""Put on the children's PYTHONPATH by tests/free_threaded/regime.py: when
TG_GIL_LOG names a file, the child appends one line to it as it exits, whether
the GIL was on at that moment (sys._is_gil_enabled()) and whether it had
imported triton, so the driver can check the regime it named held in its
programs after every import they made.  Nothing else: no output, no exit
status changed, no descriptor kept open."""
import atexit
import os
import sys


def _tg_record_gil():
    path = os.environ.get("TG_GIL_LOG")
    if not path:
        return
    on = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    line = "gil=%d triton=%d pid=%d %s\n" % (on, "triton" in sys.modules, os.getpid(), os.path.basename(sys.argv[0] or "-"))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


if os.environ.get("TG_GIL_LOG"):
    atexit.register(_tg_record_gil)
