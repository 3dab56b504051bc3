"""Added cost of one uncontended guarded call, side by side in one process.

Run under the preload with targets=guard_bench_mod:Guarded.run; Plain.run is
the same method unguarded.  Prints ns per call for both and the difference.
Usage: LD_PRELOAD=.../libtunerguard.so TUNERGUARD_OPTIONS=targets=guard_bench_mod:Guarded.run \
           python bench/guard_bench.py
"""
import os
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_bench_mod as m  # noqa: E402

g, p = m.Guarded(), m.Plain()
assert type(m.Guarded.__dict__["run"]).__name__ == "method_descriptor" or os.environ.get("TG_BENCH_NO_GUARD"), \
    "Guarded.run is not guarded: run under the preload with targets=guard_bench_mod:Guarded.run"

N = 200_000
def best(stmt):
    return min(timeit.repeat(stmt, number=N, repeat=7, globals={"g": g, "p": p})) / N * 1e9

# Interleave to share the machine's noise.
plain = min(best("p.run(1, k=2)") for _ in range(3))
guarded = min(best("g.run(1, k=2)") for _ in range(3))
print(f"{sys.version.split()[0]:8s} plain {plain:7.1f} ns  guarded {guarded:7.1f} ns  added {guarded - plain:6.1f} ns")
