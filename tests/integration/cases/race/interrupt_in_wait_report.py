# race/interrupt_in_wait_report.py: run after the prelude in tests/integration/harness.py
import time
arm = []
def fire_now():
    return bool(arm) and time.monotonic() > arm[0] and arm.pop() > 0
def audit(event, args):
    if event == "tunerguard.serialize_wait" and threading.current_thread() is threading.main_thread():
        arm.append(time.monotonic() + 0.3)  # before the 1 s report
sys.addaudithook(audit)
def before_call():
    pass
