#!/usr/bin/env bash
# The wheel built on the CPU machine, installed and used on the GPU machine
#.  Run from the repository root there:
#
#   bash tests/gpu/pip_check.sh [WHEEL] [OUTDIR]
#
# WHEEL: default the one tunerguard-*.whl under .whl/ (carried there).
# OUTDIR: default $OUT, else ./pip-check.  PYTHON: the torch environment's
# interpreter (default python3).  RUNS: runs per mode (default 3).
# REPRO_GPU=1 also runs `tunerguard repro --gpu seeds004` (a few minutes).
#
# Needs: Linux on the wheel's architecture with glibc at least the wheel's
# manylinux_2_N (2.34 for a wheel built on Debian 12: glibc 2.36 there, the
# library needs GLIBC_2.34 symbols; 2.28 for the one `tools/dev wheel`
# builds), the interpreter with torch, Triton and pip.  No network, no
# compiler: `pip install --no-deps --no-index WHEEL`.
#
# Steps: a venv made from $PYTHON with --system-site-packages (and, when
# $PYTHON is itself a venv, a .pth naming its site-packages, so torch and
# Triton import); if torch does not import there, the wheel goes into the
# torch environment itself.  Then, each in a fresh TRITON_CACHE_DIR (cold, as
# in seeds/004): tests/gpu/triton_races.py seeds004 without tunerguard (the
# race: expected to fail), under `tunerguard run --serialize -- python ...`
# (expected: exit 0 every run) and under `tunerguard run --report-dir DIR --
# python ...` (expected: a report file); `tunerguard doctor`, `tunerguard
# repro` (CPU reproducers from the package), --lib / python -m
# tunerguard.path (a file inside the environment).
# Writes OUTDIR/summary.txt (one PASS/FAIL/INFO line per check), doctor.txt,
# runs.txt, the reports under OUTDIR/detect-N/, log.txt.  Exit 0 when every
# check passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
whl=${1:-$(ls "$root"/.whl/tunerguard-*.whl 2>/dev/null | head -n 1)}
out=${2:-${OUT:-$root/pip-check}}
py=${PYTHON:-python3}
runs=${RUNS:-3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
log=$out/log.txt
: >"$summary"
: >"$log"
fails=0
say() { echo "$*" | tee -a "$summary"; }
pass() { say "PASS  $*"; }
fail() { say "FAIL  $*"; fails=$((fails + 1)); }
info() { say "INFO  $*"; }
finish() {
    say "$fails FAIL"
    [ "$fails" = 0 ]
    exit $?
}
unset LD_PRELOAD TUNERGUARD_OPTIONS TUNERGUARD_LIB TUNERGUARD_SOURCE_DIR
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1 PYTHONUNBUFFERED=1

if [ -z "$whl" ] || [ ! -f "$whl" ]; then
    fail "no wheel (give its path, or carry .whl/ with tunerguard-*.whl)"
    finish
fi
whl=$(readlink -f "$whl")
info "wheel: $(basename "$whl") ($(wc -c <"$whl") bytes)"
info "machine: $(uname -m), $(ldd --version 2>&1 | head -n 1)"
info "python: $("$py" -c 'import sys, platform; print(sys.executable, sys.version.split()[0], "libc", *platform.libc_ver())' 2>&1)"
info "torch/triton/gpu: $("$py" -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))' 2>&1 | tail -n 1)"

# ---- install ------------------------------------------------------------------
venv=$(mktemp -d /tmp/tg-pip-venv.XXXXXX)
trap 'rm -rf "$venv"' EXIT
where=venv
if "$py" -m venv --without-pip --system-site-packages "$venv" >>"$log" 2>&1; then
    # $PYTHON inside a venv: its packages are not the base's system site.
    parent=$("$py" -c 'import sys, site; print("\n".join(site.getsitepackages()) if sys.prefix != sys.base_prefix else "")')
    if [ -n "$parent" ]; then
        sp=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
        printf '%s\n' "$parent" >"$sp/_tg_parent_env.pth"
    fi
    vpy=$venv/bin/python
    if ! "$vpy" -c 'import torch, triton, pip' >>"$log" 2>&1; then
        info "torch, triton or pip do not import in a --system-site-packages venv: installing into $py's environment"
        where=env
    fi
else
    info "cannot make a venv from $py: installing into its environment"
    where=env
fi
if [ "$where" = env ]; then
    vpy=$("$py" -c 'import sys; print(sys.executable)')
    export PIP_BREAK_SYSTEM_PACKAGES=1
fi
if "$vpy" -m pip install --no-deps --no-index --force-reinstall "$whl" >>"$log" 2>&1; then
    pass "pip install --no-deps --no-index $(basename "$whl") (into the $where: $vpy)"
else
    fail "pip install --no-deps --no-index $(basename "$whl") (tail of log.txt: $(tail -n 1 "$log"))"
    finish
fi
bindir=$(dirname "$vpy")
tg=$bindir/tunerguard
prefix=$("$vpy" -c 'import sys; print(sys.prefix)')
lib=$("$vpy" -m tunerguard.path 2>>"$log")
case "$(readlink -f "$lib")" in
    "$(readlink -f "$prefix")"/*) pass "python -m tunerguard.path: $lib (inside $prefix)" ;;
    *) fail "python -m tunerguard.path: '$lib' is not inside $prefix" ;;
esac
[ "$("$tg" --lib 2>>"$log")" = "$lib" ] && pass "tunerguard --lib names the same file" || fail "tunerguard --lib: $("$tg" --lib 2>&1)"
info "$("$tg" --version 2>&1)"

"$tg" doctor >"$out/doctor.txt" 2>&1
rc=$?
[ $rc = 0 ] && pass "tunerguard doctor: $(tail -n 1 "$out/doctor.txt")" || fail "tunerguard doctor exit $rc: $(grep '^FAIL' "$out/doctor.txt" | head -n 2 | tr '\n' ' ')"
"$tg" repro >"$out/repro_cpu.txt" 2>&1
rc=$?
[ $rc = 0 ] && pass "tunerguard repro (CPU reproducers from the package): $(tail -n 1 "$out/repro_cpu.txt")" ||
    fail "tunerguard repro exit $rc: $(tail -n 1 "$out/repro_cpu.txt")"

# ---- seeds/004 with real Triton -------------------------------------------------
script=$here/triton_races.py
export PATH="$bindir:$PATH"     # `python` is the environment's, as a user's activated venv
: >"$out/runs.txt"
run_one() { # MODE I -> rc in $rc, work dir in $w
    local mode=$1 i=$2
    w=$(mktemp -d /tmp/tg-pip-run.XXXXXX)
    local t0=$(date +%s.%N)
    case "$mode" in
        none) (cd "$w" && TRITON_CACHE_DIR="$w/cache" timeout 300 python "$script" seeds004) >"$w/out" 2>&1 ;;
        serialize) (cd "$w" && TRITON_CACHE_DIR="$w/cache" timeout 300 tunerguard run --serialize -- python "$script" seeds004) >"$w/out" 2>&1 ;;
        detect) (cd "$w" && TRITON_CACHE_DIR="$w/cache" timeout 300 tunerguard run --report-dir "$out/detect-$i" -- python "$script" seeds004) >"$w/out" 2>&1 ;;
    esac
    rc=$?
    local dt=$(python -c "import sys; print('%.1f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$(date +%s.%N)" "$t0")
    printf '%-9s run %d: exit %d, %s s: %s\n' "$mode" "$i" "$rc" "$dt" "$(grep -v '^tunerguard: ' "$w/out" | tail -n 1)" >>"$out/runs.txt"
    { echo "== $mode run $i: exit $rc"; tail -n 15 "$w/out"; } >>"$log"
}
nfail=0
for i in $(seq 1 "$runs"); do
    run_one none "$i"
    if [ $rc = 2 ]; then   # triton_races.py: set-up problem (no GPU, no Triton)
        fail "set-up: python triton_races.py seeds004 exit 2: $(tail -n 1 "$w/out")"
        rm -rf "$w"
        finish
    fi
    [ $rc != 0 ] && nfail=$((nfail + 1))
    rm -rf "$w"
done
info "without tunerguard: $nfail of $runs runs failed (the race; seeds/004 saw 5 of 5 cold runs fail on an H200)"
nok=0
for i in $(seq 1 "$runs"); do run_one serialize "$i"; [ $rc = 0 ] && nok=$((nok + 1)); rm -rf "$w"; done
[ $nok = "$runs" ] && pass "tunerguard run --serialize -- python triton_races.py seeds004: exit 0 in $nok of $runs runs" ||
    fail "tunerguard run --serialize -- python triton_races.py seeds004: exit 0 in only $nok of $runs runs"
nrep=0
for i in $(seq 1 "$runs"); do
    run_one detect "$i"
    ls "$out/detect-$i"/tunerguard.*.txt >/dev/null 2>&1 && nrep=$((nrep + 1))
    rm -rf "$w"
done
[ $nrep -ge 1 ] && pass "tunerguard run -- python triton_races.py seeds004: a report in $nrep of $runs runs ($(ls "$out"/detect-*/tunerguard.*.txt 2>/dev/null | head -n 1 | sed "s|$out/||"))" ||
    fail "tunerguard run -- python triton_races.py seeds004: no report in $runs runs"
first=$(ls "$out"/detect-*/tunerguard.*.txt 2>/dev/null | head -n 1)
[ -n "$first" ] && info "$(grep -m 1 '^SUMMARY:' "$first")"

if [ "${REPRO_GPU:-0}" = 1 ]; then
    timeout 900 tunerguard repro --gpu seeds004 >"$out/repro_gpu.txt" 2>&1
    rc=$?
    [ $rc = 0 ] && pass "tunerguard repro --gpu seeds004 (the packaged triton_races.py)" ||
        fail "tunerguard repro --gpu seeds004 exit $rc: $(tail -n 1 "$out/repro_gpu.txt")"
fi
finish
