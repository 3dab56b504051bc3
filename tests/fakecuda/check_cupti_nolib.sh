#!/bin/sh
# cupti=1 with no libcupti to be found: exactly one line on stderr, and
# nothing else changes (stdout, exit status) compared with cupti=0.  The
# same for a cupti_path naming a FIFO, which must not block.
# Python child with tunerguard and the fake libcuda preloaded, so the backend
# is tried at arming.  Args: libtunerguard.so fake-libcuda.so.1
set -u
lib="$1"; fake="$2"
py=$(command -v python3) || { echo "no python3: skipped"; exit 77; }
prog='import sys; print("hello"); sys.exit(3)'
run() { # $1 options -> out.txt err.txt, status in rc
    LD_PRELOAD="$lib $fake" TUNERGUARD_OPTIONS="log_path=stderr:$1" "$py" -c "$prog" >out.txt 2>err.txt
    rc=$?
}
run "cupti=0"; rc0=$rc; cp out.txt out0.txt; cp err.txt err0.txt
run "cupti=1:cupti_path=/nonexistent/libcupti.so"; rc1=$rc
fail=0
[ "$rc0" = 3 ] && [ "$rc1" = 3 ] || { echo "exit status $rc0 / $rc1, want 3 / 3"; fail=1; }
cmp -s out0.txt out.txt || { echo "stdout differs"; fail=1; }
[ ! -s err0.txt ] || { echo "cupti=0 wrote to stderr:"; cat err0.txt; fail=1; }
n=$(wc -l < err.txt)
[ "$n" = 1 ] || { echo "cupti=1: $n stderr lines, want 1:"; cat err.txt; fail=1; }
grep -q "cupti=1: cannot load /nonexistent/libcupti.so" err.txt || { echo "unexpected line:"; cat err.txt; fail=1; }
nolib_line=$(cat err.txt)
# cupti_path naming a FIFO: refused before dlopen (whose open() would block
# until a writer came), one line, promptly (the timeout stands for "forever")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tg-cupti-fifo.XXXXXX")
mkfifo "$tmp/libcupti.so"
LD_PRELOAD="$lib $fake" TUNERGUARD_OPTIONS="log_path=stderr:cupti=1:cupti_path=$tmp/libcupti.so" \
    timeout 20 "$py" -c "$prog" >out.txt 2>err.txt
rc=$?
[ "$rc" = 3 ] || { echo "cupti_path=<a FIFO>: exit status $rc, want 3 (124: it blocked)"; fail=1; }
n=$(wc -l < err.txt)
[ "$n" = 1 ] && grep -q "cupti=1: cupti_path $tmp/libcupti.so is not a regular file (a FIFO); going on without GPU intervals" err.txt ||
    { echo "cupti_path=<a FIFO>: want one line naming it:"; cat err.txt; fail=1; }
rm -rf "$tmp"
[ $fail = 0 ] && { echo "ok: $nolib_line / $(cat err.txt)"; exit 0; }
exit 1
