"""A stand-in for Triton's package, for bench/guard_bench.py --triton: only
triton.runtime.autotuner.Autotuner, whose run() is a tuned call's fast path."""
