#!/usr/bin/env bash
# GPU checks with real Triton and PyTorch (run on the GPU machine).
#
#   tests/gpu/run_gpu.sh LIB OUTDIR [SCENARIO:RUNS ...]
#
# Each scenario runs without tunerguard, with mode=detect and with
# mode=serialize, each run in a fresh TRITON_CACHE_DIR (cold cache, as in the
# seeds).  Writes OUTDIR/summary.txt (one line per run and a table),
# OUTDIR/reports.txt (the detect-mode reports) and OUTDIR/log.txt.
set -u
lib=$(readlink -f "${1:?LIB}")
out=${2:?OUTDIR}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(seeds004:5 hammer:2 cached_subclass:2 reset_to_zero:2)
py=${PYTHON:-python3}
summary="$out/summary.txt"
: >"$summary"
for spec in "${specs[@]}"; do
    scen=${spec%%:*}
    runs=${spec##*:}
    for mode in none detect serialize; do
        fails=0 reported=0 total=0
        for i in $(seq 1 "$runs"); do
            work=$(mktemp -d)
            env=(TRITON_CACHE_DIR="$work/cache" PYTHONUNBUFFERED=1)
            if [ "$mode" != none ]; then
                env+=(LD_PRELOAD="$lib" TUNERGUARD_OPTIONS="mode=$mode:log_path=$work/tg")
            fi
            start=$(date +%s.%N)
            (cd "$work" && env "${env[@]}" timeout 300 "$py" "$here/triton_races.py" "$scen") >"$work/stdout" 2>"$work/stderr"
            rc=$?
            dur=$(python3 -c "import sys; print(float(sys.argv[1]) - float(sys.argv[2]))" "$(date +%s.%N)" "$start")
            rep=$(ls "$work"/tg.*.txt 2>/dev/null | head -n 1)
            total=$((total + 1))
            [ "$rc" -ne 0 ] && fails=$((fails + 1))
            [ -n "$rep" ] && reported=$((reported + 1))
            printf '%-16s %-9s run %d: exit %d, %5.1f s, report %s, %s\n' "$scen" "$mode" "$i" "$rc" "$dur" \
                "$([ -n "$rep" ] && echo yes || echo no)" "$(grep -E 'triton_races|tunerguard:' "$work/stderr" | tail -n 2 | tr '\n' ' ')" >>"$summary"
            { echo "===== $scen $mode run $i (exit $rc)"; tail -n 25 "$work/stderr"; } >>"$out/log.txt"
            if [ -n "$rep" ] && [ "$i" = 1 ]; then
                { echo "===== $scen $mode"; cat "$rep"; } >>"$out/reports.txt"
                [ -f "${rep%.txt}.jsonl" ] && { echo "===== $scen $mode (jsonl)"; cat "${rep%.txt}.jsonl"; } >>"$out/reports.jsonl"
            fi
            rm -rf "$work"
        done
        printf 'TABLE %-16s %-9s failed %d/%d, reported %d/%d\n' "$scen" "$mode" "$fails" "$total" "$reported" "$total" >>"$summary"
    done
done
cat "$summary"
