# run_shapes/shape_property.py: a tuner class whose run is no plain function, joined after shape_prelude.py
class Tuner(Autotuner):
    @property
    def run(self):
        return types.MethodType(own_run, self)
class MoreTuners(Tuner):  # inherits the property: said for Tuner, once
    pass
