# race/interrupt_in_wait_hook.py: run after the prelude in tests/integration/harness.py
import signal
from triton.runtime.autotuner import Autotuner
fire = [1]
def audit(event, args):
    if event == "tunerguard.serialize_wait" and fire and threading.current_thread() is threading.main_thread():
        fire.clear()
        signal.raise_signal(signal.SIGINT)  # its handler runs in this hook
sys.addaudithook(audit)
def make_tuner(hook):
    return Autotuner(my_kernel, hook)
def before_call():
    pass
