#!/usr/bin/env bash
# flash-linear-attention's own module tests with pytest-run-parallel, without
# tunerguard, with `pytest --tunerguard` and with `--tunerguard=serialize`, each
# run with a cold Triton cache (GPU machine).
#
#   tests/gpu/fla_pytest.sh LIB FLA_SRC OUTDIR [THREADS] [TESTS...]
#
# LIB: the built libtunerguard.so (TUNERGUARD_LIB=LIB); the plugin is the
# installed tunerguard wheel's, else this checkout's python/ (-p
# tunerguard.pytest_plugin: not both, pytest would register it twice).  FLA_SRC: a checkout
# (or sdist) of flash-linear-attention at the installed version, for its tests/
# (default TESTS: tests/modules).  THREADS: --parallel-threads (default 4).
# Installs what is missing with pip --no-index (the GPU machine has no
# internet): fla from $FLA_WHEELS (flash_linear_attention, fla_core, einops),
# pytest, pytest-run-parallel, pytest-xdist and pytest-timeout from
# $PYTEST_WHEELS (tests/pytest/deps.sh PYTHON wheels makes that folder).
# Writes OUTDIR/summary.txt (a line per mode: exit status, pytest's last line,
# the tunerguard summary) and OUTDIR/<mode>.log, the report files under
# OUTDIR/<mode>/.  --timeout 600 per test (pytest-timeout) so a hang ends.
set -u
lib=$(readlink -f "${1:?LIB}")
fla=$(cd "${2:?FLA_SRC}" && pwd)
out=$(mkdir -p "${3:?OUTDIR}" && cd "$3" && pwd)
threads=${4:-4}
shift $(($# < 4 ? $# : 4))
tests=("$@")
[ ${#tests[@]} = 0 ] && tests=(tests/modules)
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$(dirname "$here")")
py=${PYTHON:-python3}
if ! "$py" -c 'import fla' 2>/dev/null; then
    [ -n "${FLA_WHEELS:-}" ] || { echo "fla_pytest.sh: fla is not installed and FLA_WHEELS is not set" >&2; exit 2; }
    "$py" -m pip install -q --no-deps --no-index "$FLA_WHEELS"/*.whl || exit 2
fi
if ! "$py" -c 'import pytest, pytest_run_parallel, xdist, pytest_timeout' 2>/dev/null; then
    [ -n "${PYTEST_WHEELS:-}" ] || { echo "fla_pytest.sh: pytest-run-parallel is not installed and PYTEST_WHEELS is not set" >&2; exit 2; }
    "$py" -m pip install -q --no-index --find-links "$PYTEST_WHEELS" pytest pytest-run-parallel pytest-xdist pytest-timeout || exit 2
fi
# the installed wheel's plugin (entry point), else this checkout's python/ and LIB
plugin=(-p tunerguard.pytest_plugin)
pypath="$src/python${PYTHONPATH:+:$PYTHONPATH}"
if "$py" -c 'import importlib.metadata as m; m.distribution("tunerguard")' 2>/dev/null; then
    plugin=()
    pypath=${PYTHONPATH:-}
fi
summary="$out/summary.txt"
: >"$summary"
for mode in none detect serialize; do
    work=$(mktemp -d)
    args=(-p no:cacheprovider "${plugin[@]}" --parallel-threads="$threads" --timeout=600 -q -rfE
          --junitxml="$out/$mode.junit.xml")
    [ "$mode" != none ] && args+=(--tunerguard="$mode" --tunerguard-report-dir="$out/$mode")
    (cd "$fla" && env TRITON_CACHE_DIR="$work/cache" PYTHONPATH="$pypath" \
        TUNERGUARD_LIB="$lib" PYTHONUNBUFFERED=1 "$py" -m pytest "${args[@]}" "${tests[@]}") >"$out/$mode.log" 2>&1
    rc=$?
    printf 'fla pytest %-9s exit %d: %s | %s\n' "$mode" "$rc" \
        "$(grep -E '(passed|failed|error)' "$out/$mode.log" | tail -n 1)" \
        "$(sed -n '/tunerguard summary/,/^=/p' "$out/$mode.log" | grep -v '^=' | head -n 8 | tr '\n' ';')" >>"$summary"
    rm -rf "$work"
done
cat "$summary"
