# shared_race.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
assert is_guarded(Autotuner), "Autotuner.run is not guarded"
tuner = Autotuner(my_kernel)
order = race_once(tuner, serialize=SERIALIZE)
print("ORDER", ",".join(order))
print("WAIT_EVENTS", len(_wait_events))
print("DONE pid", os.getpid())
