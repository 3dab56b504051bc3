# run_shapes/shape_instance_alone.py: the first tuning call, made alone, before shape_race.py
Tuner(my_kernel).run("alone")  # its first tuning: found, guarded from here
