"""An audit hook calls the kernel on the tunerguard.serialize_wait event of
the main thread's wait for that kernel's tuner (serialize): the hook's call
waits for the thread inside, as the main thread's own does; in detect,
where nothing waits, it is called from the main thread and races.  The
choreography and the exit status: handler_common.py, with the handler
called by the hook itself instead of a signal."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture"))
import handler_common as hc  # noqa: E402

hc.install(None, lambda: hc.handler(None, None))
sys.exit(hc.run_main())
