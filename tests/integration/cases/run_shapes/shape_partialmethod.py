# run_shapes/shape_partialmethod.py: a tuner class whose run is no plain function, joined after shape_prelude.py
class Tuner(Autotuner):
    run = functools.partialmethod(own_run, mode="fast")
