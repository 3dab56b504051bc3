# run_shapes/shape_descriptor.py: a tuner class whose run is no plain function, joined after shape_prelude.py
class Bound:
    def __get__(self, inst, owner=None):
        return self if inst is None else functools.partial(own_run, inst)
class Tuner(Autotuner):
    run = Bound()
