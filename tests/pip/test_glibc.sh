#!/bin/sh
# The portable wheel, for machines with glibc 2.28 or newer:
#   sh tests/pip/test_glibc.sh SOURCE_DIR [CUDA_INCLUDE]
#  1. tools/bullseye_wheel.sh builds it inside the Debian 11 (bullseye, glibc
#     2.31) root that `tools/dev bullseye-root` makes ($TG_BULLSEYE_ROOT);
#  2. it is tagged manylinux_2_28_<arch>, and every ELF file in it needs
#     glibc 2.28 or older (readelf -V) and no library outside glibc but the
#     loader, which the core needs;
#  3. auditwheel show (the venv `tools/dev test` makes, $TG_AUDITWHEEL) finds
#     it consistent with manylinux_2_N, N <= 28: its verdict is printed;
#  4. inside the root: tests/pip/wheel_run.sh on Debian 11's python3.9 (venv,
#     pip install offline, --version, doctor, seeds004 raced, reported in
#     detect mode, prevented in serialize mode), tests/inert/inert.py and the
#     preload integration tests (tests/integration) with the installed library;
#  5. on this machine (glibc 2.36): wheel_run.sh on CPython 3.12 and 3.9, and
#     inert.py and the integration tests on 3.12, where the library also maps
#     glibc's libdl.so.2 and libpthread.so.0 (empty since glibc 2.34; an
#     interpreter built there maps neither).
# Prints "ok - ..." / "FAIL - ..." per check; exit 1 when any failed, 77 with
# a line "SKIP: ..." when the root or auditwheel cannot be had (not root, no
# network when tools/dev made them).  About 45 s on 2 cores.
set -u
SRC=$(cd "${1:?source dir}" && pwd)
INC=${2:-}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/tunerguard
ROOT=${TG_BULLSEYE_ROOT:-$CACHE/bullseye-root}
AW=${TG_AUDITWHEEL:-$CACHE/auditwheel}
MAX=2.28
ARCH=$(uname -m)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tg-glibc-test.XXXXXX")
WORK=$(readlink -f "$WORK")
trap 'rm -rf "$WORK"' EXIT
. "$SRC/tests/checks.sh"
unset LD_PRELOAD TUNERGUARD_OPTIONS TUNERGUARD_LIB PYTHONPATH VIRTUAL_ENV
[ -x "$AW/bin/python" ] && "$AW/bin/python" -m auditwheel --version >/dev/null 2>&1 ||
    { echo "SKIP: no auditwheel in $AW (tools/dev test makes it from the Python package index)"; exit 77; }

# ---- 1. the build in the root ---------------------------------------------
t0=$(date +%s)
WHL=$(sh "$SRC/tools/bullseye_wheel.sh" "$ROOT" "$WORK/dist" $INC 2>"$WORK/wheel.err")
rc=$?
[ $rc = 77 ] && { echo "$WHL"; exit 77; }
check "the wheel built in the Debian 11 root ($(($(date +%s) - t0)) s): $(basename "${WHL:-none}")" [ $rc = 0 -a -f "$WHL" ]
[ $rc = 0 ] || { cat "$WORK/wheel.err"; finish; }

# ---- 2. its tag and its files' needs ----------------------------------------
case "$(basename "$WHL")" in *-py3-none-manylinux_2_28_"$ARCH".whl) tag=1 ;; *) tag=0 ;; esac
check "tagged py3-none-manylinux_2_28_$ARCH" [ $tag = 1 ]
mkdir "$WORK/x" && python3 -m zipfile -e "$WHL" "$WORK/x"
n=0
for f in $(find "$WORK/x" -type f | sort); do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = 177ELF ] || continue
    n=$((n + 1))
    rel=${f#"$WORK/x/"}
    need=$(readelf -V -W "$f" | sed -n 's/.*Name: GLIBC_\([0-9][0-9.]*\).*/\1/p' | sort -uV | tail -n 1)
    libs=$(readelf -d -W "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ' | sed 's/ $//')
    top=$(printf '%s\n%s\n' "${need:-2.0}" "$MAX" | sort -V | tail -n 1)
    check "$rel needs glibc ${need:-(none)} <= $MAX" [ "$top" = "$MAX" ]
    other=$(printf '%s\n' $libs | grep -v -x -e 'libc.so.6' -e 'libdl.so.2' -e 'libpthread.so.0' \
        -e 'ld-linux-x86-64.so.2' -e 'ld-linux-aarch64.so.1' -e 'libtunerguard.so' | tr '\n' ' ')
    check "  and no library outside glibc and the package (NEEDED: $libs)" [ -z "$other" ]
done
check "the wheel has the library, its core, the command and the stand-in libcuda ($n ELF files)" [ $n = 4 ]

# ---- 3. auditwheel ------------------------------------------------------------
"$AW/bin/python" -m auditwheel show "$WHL" >"$WORK/auditwheel.out" 2>&1
rc=$?
verdict=$(tr '\n' ' ' <"$WORK/auditwheel.out" | sed -n 's/.*is consistent with *the following platform tag: *"\([^"]*\)".*/\1/p')
minor=$(echo "$verdict" | sed -n "s/^manylinux_2_\([0-9]*\)_$ARCH\$/\1/p")
echo "auditwheel $("$AW/bin/python" -m auditwheel --version | sed -n 's/^auditwheel \([^ ]*\).*/\1/p') show: consistent with \"$verdict\""
check "auditwheel show: consistent with manylinux_2_N, N <= 28 (${verdict:-no verdict})" \
    [ $rc = 0 -a -n "$minor" ] && [ "${minor:-99}" -le 28 ]
[ -n "$minor" ] || cat "$WORK/auditwheel.out"

# ---- 4. inside the Debian 11 root -------------------------------------------
inroot() { python3 "$SRC/tests/chroot/run_in_root.py" --root "$ROOT" --bind "$SRC" --bind "$WORK" -- "$@"; }
inroot /bin/sh "$SRC/tests/pip/wheel_run.sh" /usr/bin/python3 "$WHL" "$WORK/root" >"$WORK/root.out" 2>&1
rc=$?
grep -v '^run_in_root: /' "$WORK/root.out"
check "in the Debian 11 root: the wheel installs, loads, guards, reports and serializes" [ $rc = 0 ]
LIB=$WORK/root/venv/lib/python3.9/site-packages/tunerguard/libtunerguard.so
inroot /usr/bin/python3 "$SRC/tests/inert/inert.py" --python /usr/bin/python3 --lib "$LIB" >"$WORK/inert-root.out" 2>&1
rc=$?
check "in the Debian 11 root: inert.py with the installed library ($(tail -n 1 "$WORK/inert-root.out"))" [ $rc = 0 ]
[ $rc = 0 ] || grep '^FAIL' "$WORK/inert-root.out"
# The default allocator here, not the drivers' PYTHONMALLOC=debug: on Debian 11's CPython 3.9.2
# the debug hooks abort a fork child of fork/fork_child_after_race at its exit ("Debug memory
# block ... API '0'"), which pyenv's 3.9.18 and every later interpreter run clean; see
# docs/threads-and-processes.md (forks).
PYTHONMALLOC=pymalloc inroot /usr/bin/python3 "$SRC/tests/integration/run_all.py" --lib "$LIB" --python /usr/bin/python3 >"$WORK/it-root.out" 2>&1
rc=$?
check "in the Debian 11 root: the preload integration tests with the installed library ($(grep -c '^PASS' "$WORK/it-root.out") passed)" [ $rc = 0 ]
[ $rc = 0 ] || grep -v '^PASS' "$WORK/it-root.out" | head -n 40

# ---- 5. on this machine ---------------------------------------------------------
for v in 3.12 3.9; do
    py=$(ls -d "$HOME"/.pyenv/versions/$v.*/bin/python 2>/dev/null | sort -V | tail -n 1)
    [ -n "$py" ] || { echo "SKIP: no CPython $v in ~/.pyenv/versions: the wheel on this machine's $v did not run"; continue; }
    sh "$SRC/tests/pip/wheel_run.sh" "$py" "$WHL" "$WORK/host-$v" >"$WORK/host-$v.out" 2>&1
    rc=$?
    cat "$WORK/host-$v.out"
    check "on this machine, CPython $v: the wheel installs, loads, guards, reports and serializes" [ $rc = 0 ]
    [ $v = 3.12 ] || continue
    lib=$(ls "$WORK/host-$v"/venv/lib/python*/site-packages/tunerguard/libtunerguard.so)
    python3 "$SRC/tests/inert/inert.py" --python "$py" --lib "$lib" \
        --also-mapped libdl.so.2 --also-mapped libpthread.so.0 >"$WORK/inert-host.out" 2>&1
    rc=$?
    check "on this machine, CPython $v: inert.py with the installed library ($(tail -n 1 "$WORK/inert-host.out"))" [ $rc = 0 ]
    grep 'shared object mapped' "$WORK/inert-host.out" | sed 's/^/    /'
    [ $rc = 0 ] || grep '^FAIL' "$WORK/inert-host.out"
    python3 "$SRC/tests/integration/run_all.py" --lib "$lib" --python "$py" >"$WORK/it-host.out" 2>&1
    rc=$?
    check "on this machine, CPython $v: the preload integration tests with the installed library ($(grep -c '^PASS' "$WORK/it-host.out") passed)" [ $rc = 0 ]
    [ $rc = 0 ] || grep -v '^PASS' "$WORK/it-host.out" | head -n 40
done
finish
