"""Stand-in for torch._inductor (see runtime/triton_heuristics.py)."""
