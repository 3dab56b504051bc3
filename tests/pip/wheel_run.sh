#!/bin/sh
# One interpreter, one wheel, no source tree and no network:
#   sh tests/pip/wheel_run.sh PYTHON WHEEL WORKDIR
# A venv of PYTHON in WORKDIR, `pip install --no-deps --no-index WHEEL` into
# it, then from the package alone: `tunerguard --version`, `tunerguard
# doctor`, and the packaged seeds004 reproducer (8 threads, the reconstructed
# Triton model, the stand-in libcuda.so.1 the wheel ships) fails without
# tunerguard, writes a race report under `tunerguard run` (detect) and passes
# under `tunerguard run --serialize`.  tests/pip/test_glibc.sh runs it inside
# the Debian 11 root and on the host.
# Prints "ok - ..." / "FAIL - ..." per check, prefixed with the glibc and
# the interpreter; exit 1 when any failed.
set -u
PY=${1:?python}
WHL=$(readlink -f "${2:?wheel}")
WORK=${3:?work dir}
unset LD_PRELOAD TUNERGUARD_OPTIONS TUNERGUARD_LIB TUNERGUARD_SOURCE_DIR PYTHONPATH VIRTUAL_ENV
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1
where="glibc $(ldd --version 2>/dev/null | head -n 1 | awk '{print $NF}'), $("$PY" -c 'import platform; print("python " + platform.python_version())' 2>/dev/null)"
CHECK_TAG=$where
. "$(dirname "$0")/../checks.sh"

mkdir -p "$WORK" && cd "$WORK" || exit 1
V=$WORK/venv
"$PY" -m venv "$V" >venv.log 2>&1 || { show venv.log; bad "$PY -m venv"; exit 1; }
"$V/bin/pip" install --no-deps --no-index "$WHL" >install.log 2>&1
rc=$?
check "pip ($("$V/bin/pip" --version | cut -d' ' -f1-2)) installs $(basename "$WHL")" [ $rc = 0 ]
[ $rc = 0 ] || { show install.log; exit 1; }
TG=$V/bin/tunerguard
"$TG" --version >version.out 2>&1
check "tunerguard --version: $(head -n 1 version.out)" has version.out "^tunerguard "
"$TG" doctor >doctor.out 2>&1
rc=$?
check "tunerguard doctor exits 0: $(tail -n 1 doctor.out)" [ $rc = 0 ]
check "  doctor: library and command are the same build" has doctor.out "^OK    library and command are the same build"
check "  doctor: the hooks arm in a preloaded child of the venv's python" has doctor.out "^OK    $V/bin/python[0-9.]*: hooks arm"
[ $rc = 0 ] || show doctor.out
PKG=$("$V/bin/python" -c 'import tunerguard; print(tunerguard.package_dir())')
mkdir run && ln -s "$PKG/tests/repro/scenarios/seeds004.py" run/train.py && cd run || exit 1
export LD_LIBRARY_PATH="$PKG/tests/fakecuda"
"$V/bin/python" train.py >none.out 2>&1
check "train.py (seeds004) fails without tunerguard" [ $? != 0 ]
"$TG" run -- "$V/bin/python" train.py >detect.out 2>&1
rep=$(ls tunerguard.*.txt 2>/dev/null | head -n 1)
check "tunerguard run (detect) loads, guards and writes a race report (${rep:-none})" \
    has "${rep:-/dev/null}" "SUMMARY: tunerguard: tuner race on 'test_seed004'"
[ -n "$rep" ] || show detect.out
"$TG" run --serialize -- "$V/bin/python" train.py >serialize.out 2>&1
rc=$?
check "tunerguard run --serialize: train.py passes (exit $rc)" [ $rc = 0 ]
check "  and its 8 threads returned" has serialize.out "repro seeds004: PASS"
[ $rc = 0 ] || show serialize.out
[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
