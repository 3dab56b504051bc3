"""tunerguard: find and prevent threads racing inside Triton's autotuner.

This package is the wheel of one CMake build: beside this file lie
libtunerguard.so (the preload library) and tunerguard (the command, which
finds the library next to itself).

    tunerguard.lib_path()       absolute path of libtunerguard.so, for LD_PRELOAD
    tunerguard.command_path()   absolute path of the tunerguard binary
    python -m tunerguard ARGS   the same as the tunerguard command
    python -m tunerguard.path   prints lib_path()

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


def lib_path():
    """Absolute path of the packaged libtunerguard.so (FileNotFoundError when missing)."""
    return _packaged("libtunerguard.so")


def command_path():
    """Absolute path of the packaged tunerguard binary (FileNotFoundError when missing)."""
    return _packaged("tunerguard")


def package_dir():
    """The package's directory: it holds the reproducers (tests/repro, tests/gpu) too."""
    return _HERE
