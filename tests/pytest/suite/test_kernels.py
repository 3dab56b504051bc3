"""The suite: one test that races, one known to race, and tests that do not."""
import pytest

import kernels

EXPECTED = [2 * i for i in range(8)]


def test_scale_racing(meeting):
    assert meeting.call(lambda: kernels.launch(kernels.scale_racing)) == EXPECTED


@pytest.mark.tunerguard_known_race("scale_known's tuning is shared; the test tolerates the crash")
def test_scale_known_race(meeting):
    try:
        meeting.call(lambda: kernels.launch(kernels.scale_known))
    except TypeError:
        pass


@pytest.fixture(scope="module")
def warm():
    kernels.launch(kernels.scale_warm)  # tuned once, from one thread


def test_scale_warm(warm):
    assert kernels.launch(kernels.scale_warm) == EXPECTED


def test_scale_plain():
    assert kernels.launch(kernels.scale_plain) == EXPECTED
