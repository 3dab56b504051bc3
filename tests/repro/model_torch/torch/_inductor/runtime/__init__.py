"""Stand-in for torch._inductor.runtime (see triton_heuristics.py)."""
