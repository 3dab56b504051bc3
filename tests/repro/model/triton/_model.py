"""Which Triton the model is: TG_TRITON_MODEL=3.6|main (default 3.6), or `unknown`,
which is no Triton (see RENAMES).  The releases themselves (3.4 to 3.9) run in the
tests from their own wheels (run_repro.py --triton-release); the model is what
`tunerguard repro` ships (3.6) and what stands for Triton main, which has no wheel.

Read once, when the package is imported.  The autotuner is the only part that
differs between the modelled versions (runtime/autotuner.py says how each one
is chosen); jit, the driver, testing and the cache model are the same for all.
docs/triton-versions.md has the table of what each model follows.
"""
import os

# tag -> the triton.__version__ the model reports.  main's string is our
# guess for a main of mid-2026 (after the 3.7 cut): upstream's own is not
# known to us, which is why tunerguard must not trust it (docs).
VERSIONS = {
    "3.6": "3.6.0",
    "main": "3.8.0+git0094017",
    "unknown": "9.9.0",  # no such release: see RENAMES
}

# tag -> the file (in runtime/) whose Autotuner replaces 3.6's; None: 3.6's
# own, in runtime/autotuner.py.
AUTOTUNER_FILES = {
    "3.6": None,
    "main": "autotuner_main.py",
    "unknown": "autotuner_main.py",
}

# NOT a Triton version: "unknown" is main's Autotuner with the internals tunerguard grades
# races by renamed (applied to the source before it runs), standing for a future Triton
# whose Autotuner tunerguard does not know (docs/triton-versions.md).  run, warmup,
# do_bench, self.nargs and the rest of the per-call state stay as on main.
RENAMES = {
    "unknown": (
        ("def _bench(", "def _time_config("),
        ("self._bench(", "self._time_config("),
        ("prune_configs(", "_select_configs("),
        ("check_disk_cache(", "_cached_timings("),
        ("def benchmark():", "def measure():"),
        ("key, pruned_configs, benchmark)", "key, pruned_configs, measure)"),
        ("                        benchmark()\n", "                        measure()\n"),
    ),
}


def _read():
    tag = os.environ.get("TG_TRITON_MODEL", "3.6") or "3.6"
    if tag not in VERSIONS:
        raise ImportError(f"TG_TRITON_MODEL={tag!r} is not a modelled Triton version "
                          f"(one of {', '.join(VERSIONS)})")
    return tag


TAG = _read()
