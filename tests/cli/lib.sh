# Helpers for the tunerguard command tests (sourced by tests/cli/test_*.sh).
#   sh tests/cli/test_X.sh TUNERGUARD_BIN FAKECUDA_DIR SOURCE_DIR
# Each check prints "ok - ..." or "FAIL - ..."; the script exits 1 if any failed.
set -u
TG=${1:?tunerguard binary}
FAKE=${2:?fakecuda dir}
SRC=${3:?source dir}
SCEN=$SRC/tests/repro/scenarios
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tg-cli-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
. "$SRC/tests/checks.sh"
# run_tg OUT_PREFIX ARGS...: runs tunerguard, stdout in $OUT_PREFIX.out, stderr in .err, status in $rc
run_tg() { p=$1; shift; "$TG" "$@" >"$p.out" 2>"$p.err"; rc=$?; }
