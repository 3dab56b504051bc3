# run_shapes/shape_race.py: the end of a shape program: the race
tuner = Tuner(my_kernel)
order = race_once(tuner, serialize=SERIALIZE)
print("ORDER", ",".join(order))
print("WAIT_EVENTS", len(_wait_events))
print("DONE")
