#!/bin/sh
# The plugin as a user gets it:
#   sh tests/pytest/wheel_suite.sh SOURCE_DIR TRITON_VENV_PYTHON FAKECUDA_DIR
# `pip wheel --no-index .` of a copy of the clean tree; a fresh venv of the
# Triton venv's interpreter gets `pip install --no-index` of that wheel and of
# pytest, pytest-run-parallel, pytest-xdist and pytest-timeout (their wheels
# fetched once by tests/pytest/deps.sh); Triton itself, well over 100 MB, is
# not installed again: a .pth file names the release venv's site-packages.
# Then: the wheel's entry_points.txt names the plugin (pytest11), `pytest
# --help` lists --tunerguard, and run_suite.py --installed runs every check
# through the entry point and the packaged library, with no LD_PRELOAD.
# Exit 1 when a check failed, 77 (one line) when the venv or the wheels are missing.
set -u
SRC=$(cd "${1:?source dir}" && pwd)
TPY=${2:?triton venv python}
FAKECUDA=$(cd "${3:?fakecuda dir}" && pwd)
[ -x "$TPY" ] || { echo "wheel_suite: SKIPPED: no $TPY (tools/triton_releases.sh make)"; exit 77; }
WHEELS=$(sh "$SRC/tests/pytest/deps.sh" "$TPY" wheels) || exit $?
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tg-pytest-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
. "$SRC/tests/checks.sh"
unset LD_PRELOAD TUNERGUARD_OPTIONS TUNERGUARD_LIB PYTHONPATH VIRTUAL_ENV
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

mkdir "$WORK/src"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh |
    tar --null -T - -cf -) | tar -xf - -C "$WORK/src"
(cd "$WORK/src" && "$TPY" -m pip wheel --no-index -w "$WORK/dist" .) >"$WORK/wheel.log" 2>&1
whl=$(ls "$WORK"/dist/tunerguard-*.whl 2>/dev/null | head -n 1)
check "pip wheel --no-index . builds the wheel" [ -n "$whl" ]
[ -n "$whl" ] || { show "$WORK/wheel.log"; exit 1; }
ep=$(unzip -p "$whl" '*.dist-info/entry_points.txt')
case "$ep" in *"[pytest11]"*"tunerguard = tunerguard.pytest_plugin"*) ok "entry_points.txt names the pytest plugin" ;;
    *) bad "entry_points.txt names the pytest plugin ($ep)" ;; esac
check "the wheel holds tunerguard/pytest_plugin.py and tunerguard/runtime.py" \
    sh -c "unzip -l '$whl' | grep -q 'tunerguard/pytest_plugin.py' && unzip -l '$whl' | grep -q 'tunerguard/runtime.py'"

base=$("$TPY" -c 'import sys; print(sys.base_prefix)')
"$base/bin/python3" -m venv "$WORK/venv" >"$WORK/venv.log" 2>&1 || { show "$WORK/venv.log"; bad "python -m venv"; exit 1; }
V=$WORK/venv/bin/python
"$V" -m pip install -q --no-index --find-links "$WHEELS" "$whl" pytest pytest-run-parallel pytest-xdist pytest-timeout \
    >"$WORK/install.log" 2>&1
check "pip install --no-index of the wheel, pytest and its plugins into a fresh venv" [ $? = 0 ]
site=$("$TPY" -c 'import triton, os; print(os.path.dirname(os.path.dirname(triton.__file__)))')
"$V" -c 'import site, sys; print(site.getsitepackages()[0])' | {
    read -r vsite && echo "$site" >"$vsite/zz-triton-release.pth"; }
out=$("$V" -m pytest --help 2>&1)
case "$out" in *"--tunerguard=[MODE]"*) ok "pytest --help lists --tunerguard (the entry point loads the plugin)" ;;
    *) bad "pytest --help lists --tunerguard" ;; esac
out=$(cd "$WORK" && LD_LIBRARY_PATH="$FAKECUDA" "$V" -m pytest -p no:cacheprovider "$SRC/tests/pytest/suite/test_cold_cache.py" 2>&1)
case "$out" in *"tunerguard summary"*) bad "without --tunerguard the plugin stays inactive" ;;
    *"3 passed"*) ok "without --tunerguard the plugin stays inactive" ;; *) bad "a plain run ($out)" ;; esac
"$V" "$SRC/tests/pytest/run_suite.py" --python "$V" --fakecuda "$FAKECUDA" --installed >"$WORK/suite.log" 2>&1
rc=$?
sed 's/^/  /' "$WORK/suite.log" | grep -v '^      ' 
check "run_suite.py --installed: every check through the wheel" [ $rc = 0 ]
[ $rc = 0 ] || show "$WORK/suite.log"
echo "$failures check(s) failed"
[ "$failures" = 0 ]
