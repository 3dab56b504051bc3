# race/interrupt_in_lookup.py: run after the prelude in tests/integration/harness.py
fire = []
def fire_now():
    return bool(fire) and fire.pop() == 1
def before_call():
    fire.append(1)
