# Model of triton._C: only libtriton's get_cache_invalidating_env_vars, which
# Autotuner.check_disk_cache puts into the disk cache's key.
