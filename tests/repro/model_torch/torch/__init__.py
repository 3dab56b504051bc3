"""Stand-in for the package `torch`, only as far as the model of Inductor's
CachingAutotuner needs it (tests/repro/model_torch/torch/_inductor/runtime/)."""
