"""A test that races, then hangs: pytest-timeout (--timeout-method=thread)
ends the whole process; the report written at the race stays."""
import threading

import kernels


def test_race_then_hang(meeting):
    try:
        meeting.call(lambda: kernels.launch(kernels.scale_hang))
    except TypeError:
        pass
    threading.Event().wait()
