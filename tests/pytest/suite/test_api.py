"""The Python API, from inside a test run under --tunerguard (the driver says
which mode through SUITE_EXPECT_MODE)."""
import os

import pytest

import kernels
import tunerguard


def test_active_and_mode():
    want = os.environ["SUITE_EXPECT_MODE"]
    assert tunerguard.mode() == want
    assert tunerguard.active() is (want in ("detect", "serialize"))
    assert os.path.samefile(tunerguard.loaded_library(), os.environ.get("TUNERGUARD_LIB") or tunerguard.lib_path())


@pytest.mark.tunerguard_known_race("the API test reads the race it made")
def test_reports_hold_the_race(meeting):
    try:
        meeting.call(lambda: kernels.launch(kernels.scale_api))
    except TypeError:
        pass
    races = [r for r in tunerguard.reports() if r["kind"] == "race" and r["tuner"]["kernel"] == "scale_api"]
    assert len(races) == 1
    assert races[0]["pid"] == os.getpid() and races[0]["schema"] == 2
    assert races[0]["serialized"] is (tunerguard.mode() == "serialize")
    assert races[0]["_file"] in tunerguard.report_files()
    assert "In short: kernel 'scale_api'" in tunerguard.text_summary(races[0])
