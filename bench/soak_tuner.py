"""The tuner class of bench/soak.py (a module of its own: tunerguard guards
targets=soak_tuner:SoakTuner.run when this module is imported)."""


class SoakTuner:
    def __init__(self, i):
        self.base_fn = type("Fn", (), {"__name__": "soak_%d" % i})()
        self.owner = None
        self._i = i

    def run(self, body, *args):
        return body(self, *args)
