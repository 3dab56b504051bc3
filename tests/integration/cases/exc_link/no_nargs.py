# exc_link/no_nargs.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
class Keeps(Autotuner):
    def run(self, tag):
        if self.drop:
            del self.nargs
        return self._bench(tag)
tuner = Keeps(lambda tag: tag)
tuner.drop = os.environ["NARGS"] == "drop"
print("RESULT", tuner.run("one"), hasattr(tuner, "nargs"))
