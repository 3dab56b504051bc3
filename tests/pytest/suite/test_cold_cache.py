"""tunerguard_cold_cache: a fresh Triton cache folder, and tuned keys forgotten.
One thread each (the point is the fixture, not the race)."""
import os

import pytest

import kernels

pytestmark = pytest.mark.parallel_threads(1)
BEFORE = os.environ.get("TRITON_CACHE_DIR")


def test_warm_first():
    kernels.launch(kernels.scale_warm)
    assert list(kernels.scale_warm.cache) != []


def test_cold(tunerguard_cold_cache):
    assert os.environ["TRITON_CACHE_DIR"] == str(tunerguard_cold_cache)
    assert os.listdir(tunerguard_cold_cache) == []
    assert list(kernels.scale_warm.cache) == []


def test_cache_dir_put_back():
    assert os.environ.get("TRITON_CACHE_DIR") == BEFORE
