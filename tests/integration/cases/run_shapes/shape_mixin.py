# run_shapes/shape_mixin.py: a tuner class whose run is no plain function, joined after shape_prelude.py
class RunMixin:  # no tuner: its other users' calls are no sessions
    def run(self, *args, **kwargs):
        return own_run(self, *args, **kwargs)
class Tuner(RunMixin, Autotuner):
    pass
class NotATuner(RunMixin):
    def _bench(self, *args):
        self.hook(self, *args)
race_once(NotATuner(), serialize=SERIALIZE)  # overlapping, but no tuner: no report, no wait
print("NOT_A_TUNER_WAITS", len(_wait_events))
