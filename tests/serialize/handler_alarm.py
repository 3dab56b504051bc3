"""A kernel called from a SIGALRM handler (signal.setitimer) while the main
thread waits for that kernel's tuner (serialize): the handler's call must
wait for the thread inside, as the main thread's own does.  The choreography
and the exit status: handler_common.py; here, arm() starts a one-shot
interval timer whose signal the kernel delivers to the process (the main
thread, parked in tunerguard's wait, or the audit hook where it was armed,
runs the handler)."""
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
import handler_common as hc  # noqa: E402

hc.install(signal.SIGALRM, lambda: signal.setitimer(signal.ITIMER_REAL, 0.001))
sys.exit(hc.run_main())
