#!/usr/bin/env bash
# The flash-linear-attention model (tests/gpu/fla_model.py) without tunerguard,
# in detect mode and in serialize mode, each run with a cold Triton cache.
#
#   tests/gpu/run_fla.sh LIB OUTDIR [RUNS] [WHEELDIR]
#
# WHEELDIR: where flash-linear-attention's wheels are (flash_linear_attention,
# fla_core, einops), installed with pip --no-deps --no-index when `import fla`
# fails (the GPU machine has no internet).  Writes OUTDIR/summary.txt (a line
# per run: exit status, report, the race report's line count) and, for the first
# detect and serialize runs, their report files.  MODES="detect" runs fewer modes.
set -u
lib=$(readlink -f "${1:?LIB}")
out=$(mkdir -p "${2:?OUTDIR}" && cd "$2" && pwd)
runs=${3:-2}
wheels=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
if ! "$py" -c 'import fla' 2>/dev/null; then
    [ -n "$wheels" ] || { echo "run_fla.sh: fla is not installed and no WHEELDIR given" >&2; exit 2; }
    "$py" -m pip install -q --no-deps --no-index "$wheels"/*.whl || exit 2
fi
summary="$out/summary.txt"
: >"$summary"
for mode in ${MODES:-none detect serialize}; do
    for i in $(seq 1 "$runs"); do
        work=$(mktemp -d)
        env=(TRITON_CACHE_DIR="$work/cache" PYTHONUNBUFFERED=1)
        [ "$mode" != none ] && env+=(LD_PRELOAD="$lib" TUNERGUARD_OPTIONS="mode=$mode:log_path=$work/tg")
        (cd "$work" && env "${env[@]}" timeout 400 "$py" "$here/fla_model.py") >"$work/stdout" 2>"$work/stderr"
        rc=$?
        rep=$(ls "$work"/tg.*.txt 2>/dev/null | head -n 1)
        lines=-
        if [ -n "$rep" ]; then
            # the first report: from its WARNING line to its SUMMARY line
            lines=$(awk '/^WARNING:/{on=1} on{n++} /^SUMMARY:/{if(on){print n; exit}}' "$rep")
        fi
        printf 'fla %-9s run %d: exit %d, report %s, first report %s lines; %s\n' "$mode" "$i" "$rc" \
            "$([ -n "$rep" ] && echo yes || echo no)" "$lines" \
            "$(grep -E 'fla_model:|tunerguard:|Error' "$work/stderr" | tail -n 3 | tr '\n' ' ')" >>"$summary"
        if [ "$i" = 1 ]; then
            cp "$work/stderr" "$out/$mode.stderr"
            [ -n "$rep" ] && cp "$rep" "$out/$mode.report.txt"
            [ -n "$rep" ] && [ -f "${rep%.txt}.jsonl" ] && cp "${rep%.txt}.jsonl" "$out/$mode.report.jsonl"
        fi
        rm -rf "$work"
    done
done
cat "$summary"
