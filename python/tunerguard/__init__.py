"""tunerguard: find and prevent threads racing inside Triton's autotuner.

This package is the wheel of one CMake build: beside this file lie
libtunerguard.so (the preload library) and tunerguard (the command, which
finds the library next to itself).

    tunerguard.lib_path()       absolute path of libtunerguard.so, for LD_PRELOAD
    tunerguard.command_path()   absolute path of the tunerguard binary
    python -m tunerguard ARGS   the same as the tunerguard command
    python -m tunerguard.path   prints lib_path()

What this process runs under (tunerguard/runtime.py, docs/pytest.md):

    tunerguard.active(), tunerguard.mode(), tunerguard.reports(),
    tunerguard.report_files(), tunerguard.loaded_library(), tunerguard.ReportReader

`pytest --tunerguard` is the plugin tunerguard/pytest_plugin.py (entry point pytest11).

Importing the package loads nothing: the library is preloaded into the
programs tunerguard runs, never into this interpreter.
"""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _packaged(name):
    path = os.path.join(_HERE, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            "tunerguard: no %s in %s (the source tree's python/ holds no build: "
            "install the package with `pip install .`, or use build/%s)" % (name, _HERE, name))
    return path


from tunerguard.runtime import (  # noqa: E402  (after _HERE: the API reads files only)
    ReportReader, active, clear_tuner_caches, loaded_library, log_path, mode, options, report_files, reports,
    text_summary)


def lib_path():
    """Absolute path of the packaged libtunerguard.so (FileNotFoundError when missing)."""
    return _packaged("libtunerguard.so")


def command_path():
    """Absolute path of the packaged tunerguard binary (FileNotFoundError when missing)."""
    return _packaged("tunerguard")


def package_dir():
    """The package's directory: it holds the reproducers (tests/repro, tests/gpu) too."""
    return _HERE
