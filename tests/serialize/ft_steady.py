"""The steady state without the GIL, under detect: THREADS threads call two
tuned keys of two Autotuners (the model of Triton's in
tests/integration/fixtures) CALLS times each, at once (a barrier), and catch
the TypeError the race raises.  Every overlap is a race there
(docs/free-threading.md, "Overlaps on tuned keys without the GIL"): the
reports, their repeats and the exception links run against threads entering
and leaving the same slots all the time.

  python3.13t ft_steady.py THREADS CALLS

Prints "DONE <TypeErrors>" when every thread finished.  A stress program: the
threads meet often but not on cue; the overlap itself is forced with events in
integration race/race_tuned_key_overlap."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration", "fixtures"))
from triton.runtime.autotuner import Autotuner  # noqa: E402

THREADS, CALLS = int(sys.argv[1]), int(sys.argv[2])


class Tuner(Autotuner):
    cache = None

    def run(self, tag):
        self.nargs = {0: tag}
        try:
            if self.cache is None:
                self._bench(tag)  # tuned once, before the threads start
                self.cache = {"key": "config"}
            call = {**self.nargs, "config": self.cache["key"]}
            return self.fn(call)
        finally:
            self.nargs = None


def kernel_a(call):
    return call


def kernel_b(call):
    return call


tuners = (Tuner(kernel_a), Tuner(kernel_b))
for tuner in tuners:
    tuner.run("warm-up")
start = threading.Barrier(THREADS)
raised = [0] * THREADS


def loop(i):
    start.wait()
    for _ in range(CALLS):
        for tuner in tuners:
            try:
                tuner.run(i)
            except TypeError:
                raised[i] += 1


threads = [threading.Thread(target=loop, args=(i,)) for i in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("DONE", sum(raised), flush=True)
