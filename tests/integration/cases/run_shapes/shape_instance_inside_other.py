# run_shapes/shape_instance_inside_other.py: after shape_instance.py, a call inside another tuner's
inner = Tuner(my_kernel)
outer = Autotuner(lambda *args: inner.run(*args))
print(outer.run("x"))
