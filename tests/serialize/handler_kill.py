"""A kernel called from a SIGUSR1 handler while the main thread waits for
that kernel's tuner (serialize), the signal sent to the main thread by
another thread (signal.pthread_kill): the handler's call must wait for the
thread inside, as the main thread's own does.  The choreography and the
exit status: handler_common.py; here, arm() lets a sender thread send it."""
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
import handler_common as hc  # noqa: E402

go = threading.Event()


def sender():
    if go.wait(hc.T):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)


threading.Thread(target=sender, name="sender", daemon=True).start()
hc.install(signal.SIGUSR1, go.set)
sys.exit(hc.run_main())
