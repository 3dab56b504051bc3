#!/bin/sh
# t_olddrv against the old driver, tunerguard preloaded (LD_PRELOAD and
# LD_LIBRARY_PATH come from the ctest environment):
#   verbosity=0: runs to completion, nothing at all on stderr;
#   verbosity=1: runs to completion, exactly one "driver lacks X" line for
#   each variant the driver lacks, and no other "lacks" line.
# usage: check_olddrv.sh T_OLDDRV
set -u
prog=$1
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
fail() { echo "check_olddrv: $*"; echo "--- stderr:"; cat "$err"; exit 1; }

TUNERGUARD_OPTIONS=verbosity=0:log_path=stderr "$prog" 2>"$err" || fail "verbosity=0: exit status $?"
[ -s "$err" ] && fail "verbosity=0: stderr is not empty"

TUNERGUARD_OPTIONS=verbosity=1:log_path=stderr "$prog" 2>"$err" || fail "verbosity=1: exit status $?"
for v in cuLaunchKernelEx cuLaunchKernelEx_ptsz cuCtxSynchronize_v2 cuLibraryLoadData \
         cuLibraryGetKernel cuGetProcAddress_v2; do
    n=$(grep -c "the driver lacks $v;" "$err")
    [ "$n" = 1 ] || fail "verbosity=1: $n lines for $v, want 1"
done
n=$(grep -c "the driver lacks" "$err")
[ "$n" = 6 ] || fail "verbosity=1: $n 'lacks' lines, want 6"
echo "ok"
