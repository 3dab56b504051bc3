# Checks for the shell tests, sourced (tests/cli/lib.sh, tests/pip/*.sh).
# Each check prints "ok - ..." or "FAIL - ..." (with "[$CHECK_TAG] " in
# front where the script sets CHECK_TAG); finish exits 1 if any failed.
failures=0
ok() { echo "ok - ${CHECK_TAG:+[$CHECK_TAG] }$*"; }
bad() { echo "FAIL - ${CHECK_TAG:+[$CHECK_TAG] }$*"; failures=$((failures + 1)); }
# check DESC COND...: run COND (a command), ok when it succeeds
check() { d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
has() { grep -q -- "$2" "$1"; }
show() { echo "--- $1"; tail -n 20 "$1"; }
finish() {
    if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
    echo "all checks passed"; exit 0
}
