"""Added cost of one uncontended guarded call, side by side in one process.

Run under the preload with targets=guard_bench_mod:Guarded.run; Plain.run is
the same method unguarded.  Prints ns per call for both and the difference.
Usage: LD_PRELOAD=.../libtunerguard.so TUNERGUARD_OPTIONS=targets=guard_bench_mod:Guarded.run \
           python bench/guard_bench.py [--inside]
--inside: with another thread inside the same instance (a contended entry per call).
--triton: the guarded class is a stand-in triton.runtime.autotuner.Autotuner (bench/guard_bench_triton),
          guarded and marked as Triton's is, no targets= needed.
"""
import os
import sys
import threading
import time
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if "--triton" in sys.argv[1:]:
    # Triton's Autotuner as tunerguard sees it (the built-in targets: run and
    # warmup guarded, the tuning methods marked), from a stand-in package.
    sys.path.insert(0, os.path.join(HERE, "guard_bench_triton"))
    from triton.runtime import autotuner as m  # noqa: E402
    m.Guarded = m.Autotuner
else:
    import guard_bench_mod as m  # noqa: E402

g, p = m.Guarded(), m.Plain()
# --inside: another thread parked inside g.run (and p.run) for the whole
# measurement, so every measured call of g is a contended entry (detect: an
# overlap, counted; the path of tuned calls from several threads), without
# the GIL hand-offs that make those noisy to time.
inside = "--inside" in sys.argv[1:]
if inside:
    release = threading.Event()
    parked = [threading.Thread(target=o.run, args=(release,), daemon=True) for o in (g, p)]
    for th in parked:
        th.start()
    time.sleep(0.2)  # both blocked in Event.wait inside run (the GIL released)
def _vectorcall_of(f):
    import ctypes
    off = ctypes.c_ssize_t.from_address(id(type(f)) + 7 * ctypes.sizeof(ctypes.c_void_p)).value
    return ctypes.c_void_p.from_address(id(f) + off).value


def _guarded(f):
    """A method descriptor (3.11), or the function with tunerguard's trampoline in its vectorcall slot."""
    return type(f).__name__ == "method_descriptor" or _vectorcall_of(f) != _vectorcall_of(best)


def best(stmt):
    return min(timeit.repeat(stmt, number=N, repeat=7, globals={"g": g, "p": p})) / N * 1e9


N = 200_000
assert _guarded(m.Guarded.__dict__["run"]) or os.environ.get("TG_BENCH_NO_GUARD"), \
    "Guarded.run is not guarded: run under the preload (with targets=guard_bench_mod:Guarded.run unless --triton)"


# Interleave to share the machine's noise.
plain = min(best("p.run(1, k=2)") for _ in range(3))
guarded = min(best("g.run(1, k=2)") for _ in range(3))
if inside:
    release.set()
    for th in parked:
        th.join()
print(f"{sys.version.split()[0]:8s}{' triton' if m.__name__ != 'guard_bench_mod' else ''}{' inside' if inside else ''} plain {plain:7.1f} ns  guarded {guarded:7.1f} ns  added {guarded - plain:6.1f} ns")
