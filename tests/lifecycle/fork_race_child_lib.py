"""race(tuner): force one overlap in the calling process (a thread parked
inside tuner.run in a function named _bench, the caller enters too)."""
import threading

from common import T, join, must


def race(tuner):
    """One thread parks inside tuner.run (in a function named _bench, which
    tunerguard recognises as tuning), the calling thread enters too."""
    inside, release = threading.Event(), threading.Event()

    def _bench():
        inside.set()
        release.wait(T)

    th = threading.Thread(target=tuner.run, args=(_bench,), name="victim")
    th.start()
    must(inside, "victim inside")
    tuner.run(lambda: None)
    release.set()
    join([th])
