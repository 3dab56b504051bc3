#!/usr/bin/env bash
# On a machine with two GPUs: threads on different devices sharing one
# autotuner (the seeds' configuration).  DEV2=0 in the environment puts both
# threads on device 0 (two streams), for a machine with one GPU.  Three parts,
# each one device call:
#
#   tests/gpu/two_gpus.sh LIB OUTDIR races [JOBS [SCENARIO,NAME,OPTIONS,RUNS ...]]
#       scenarios of tests/gpu/triton_races.py with --device 0 --device2 1, each
#       run in a fresh TRITON_CACHE_DIR, JOBS runs at a time (default 8).  OPTIONS
#       is TUNERGUARD_OPTIONS, or none for a run without tunerguard.  Default:
#       keys_loop: none x 20, serialize x 20, detect x 4, detect:stress=1 x 4;
#       seeds004: none x 10, serialize x 20, detect x 2.
#       OUTDIR/races.txt: one line per run and a table; OUTDIR/race_cuda.txt:
#       what each run's first race report says of both threads' CUDA calls;
#       OUTDIR/reports.tgz: the reports and per-run lines.
#   tests/gpu/two_gpus.sh LIB OUTDIR steady [ROUNDS]
#       tests/gpu/steady_state.py --device 0 --device2 1, ROUNDS rounds (default
#       5) of none / detect / serialize side by side; OUTDIR/steady.txt ends with
#       the medians and ratios.  Run it alone on the machine.  LIB_BEFORE=LIB2 in
#       the environment adds detect-before / serialize-before rounds with LIB2
#       (an older build), for a before/after comparison in the same run.
#   tests/gpu/two_gpus.sh LIB OUTDIR interference [RUNS]
#       tests/gpu/isolate_tuning.py --variant alone,load,other_device: a hammer
#       thread on device 0 (same device) or device 1 (other device) while device
#       0 tunes; OUTDIR/interference.json.
set -u
lib=$(readlink -f "${1:?LIB}")
out=$(mkdir -p "${2:?OUTDIR}" && cd "$2" && pwd)
part=${3:?races, steady or interference}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
export lib out here py

# One run: SCENARIO MODE OPTIONS INDEX.  Writes OUTDIR/runs/SCENARIO.MODE.INDEX.
one_run() {
    local scen=$1 mode=$2 opts=$3 i=$4 work rc start dur rep
    work=$(mktemp -d)
    local env=(TRITON_CACHE_DIR="$work/cache" PYTHONUNBUFFERED=1)
    [ "$opts" != none ] && env+=(LD_PRELOAD="$lib" TUNERGUARD_OPTIONS="$opts:log_path=$work/tg")
    start=$(date +%s.%N)
    (cd "$work" && env "${env[@]}" timeout 300 "$py" "$here/triton_races.py" "$scen" --device 0 --device2 "${DEV2:-1}") \
        >"$work/stdout" 2>"$work/stderr"
    rc=$?
    dur=$("$py" -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$(date +%s.%N)" "$start")
    rep=$(ls "$work"/tg.*.txt 2>/dev/null | head -n 1)
    if [ -n "$rep" ]; then
        cp "$rep" "$out/reports/$scen.$mode.$i.txt"
        cp "${rep%.txt}.jsonl" "$out/reports/$scen.$mode.$i.jsonl" 2>/dev/null
    fi
    printf '%s %s %s rc=%d %ss report=%s | %s\n' "$scen" "$mode" "$i" "$rc" "$dur" "$([ -n "$rep" ] && echo yes || echo no)" \
        "$(grep -E 'triton_races|tunerguard:' "$work/stderr" | tail -n 2 | tr '\n' ' ' | cut -c1-300)" \
        >"$out/runs/$scen.$mode.$i"
    rm -rf "$work"
}
export -f one_run

case $part in
races)
    jobs=${4:-8}
    shift $(($# < 4 ? $# : 4))
    specs=("$@")
    [ ${#specs[@]} -gt 0 ] || specs=(keys_loop,none,none,20 keys_loop,serialize,mode=serialize,20
        keys_loop,detect,mode=detect,4 keys_loop,detect-stress,mode=detect:stress=1,4
        seeds004,none,none,10 seeds004,serialize,mode=serialize,20 seeds004,detect,mode=detect,2)
    rm -rf "$out/runs" "$out/reports"
    mkdir -p "$out/runs" "$out/reports"
    for spec in "${specs[@]}"; do
        IFS=, read -r scen name opts runs <<<"$spec"
        for i in $(seq 1 "$runs"); do echo "$scen $name $opts $i"; done
    done | xargs -P "$jobs" -L 1 bash -c 'one_run "$@"' _
    {
        cat "$out"/runs/* | sort -k1,1 -k2,2 -k3,3n
        for f in "$out"/runs/*; do b=$(basename "$f"); echo "${b%.*}"; done | sort | uniq | while read -r cell; do
            n=$(ls "$out"/runs/"$cell".* | wc -l)
            pass=$(cat "$out"/runs/"$cell".* | grep -c ' rc=0 ')
            rep=$(cat "$out"/runs/"$cell".* | grep -c 'report=yes')
            printf 'TABLE %-24s exit 0 in %d/%d, report in %d/%d\n' "$cell" "$pass" "$n" "$rep" "$n"
        done
    } >"$out/races.txt"
    "$py" - "$out/reports" >"$out/race_cuda.txt" <<'EOF'
import glob, json, os, sys
# What each detect run's first race report says of both threads' CUDA calls.
def call(c):
    if not c:
        return "no CUDA call yet"
    where = "all its streams" if str(c["fn"]).startswith("cuCtxSynchronize") else f"stream {c['stream']}"
    state = "still inside it" if c["inside"] else "returned"
    return f"{c['fn']} on device {c['device']} ({where}), {state}"
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    races = [r for r in map(json.loads, open(f)) if r["kind"] == "race"]
    if not races:
        print(f"{os.path.basename(f)}: no race record")
        continue
    r = races[0]
    print(f"{os.path.basename(f)}: severity {r['severity']}, {len(races)} race record(s)")
    print(f"  entering {r['entering']['name']}: {call(r['entering']['cuda'])}")
    print(f"  inside   {r['inside']['name']}: {call(r['inside']['cuda'])}")
EOF
    tar czf "$out/reports.tgz" -C "$out" runs reports && rm -rf "$out/runs" "$out/reports"
    grep TABLE "$out/races.txt"
    head -n 40 "$out/race_cuda.txt"
    ;;
steady)
    rounds=${4:-5}
    : >"$out/steady.txt"
    w=$(mktemp -d)
    for r in $(seq 1 "$rounds"); do
        for mode in none detect serialize ${LIB_BEFORE:+detect-before serialize-before}; do
            env=(TRITON_CACHE_DIR="$w/c")
            case $mode in
            *-before) env+=(LD_PRELOAD="$(readlink -f "$LIB_BEFORE")" TUNERGUARD_OPTIONS="mode=${mode%-before}") ;;
            none) ;;
            *) env+=(LD_PRELOAD="$lib" TUNERGUARD_OPTIONS="mode=$mode") ;;
            esac
            (cd "$w" && env "${env[@]}" timeout 300 "$py" "$here/steady_state.py" --device 0 --device2 "${DEV2:-1}" --iters 20000) \
                2>"$w/err" | grep '^{' | tail -n 1 | sed "s/^/round $r $mode: /" >>"$out/steady.txt"
            grep tunerguard: "$w/err" | tail -n 1 | sed "s/^/round $r $mode summary: /" >>"$out/steady.txt"
        done
    done
    "$py" - "$out/steady.txt" >>"$out/steady.txt" <<'EOF'
import json, statistics, sys
per = {}
for line in open(sys.argv[1]):
    if ": {" not in line:
        continue
    head, js = line.split(": ", 1)
    rec = json.loads(js)
    per.setdefault(head.split()[2], []).append((rec["calls_per_s"], rec["correct"]))
med = {m: statistics.median(v for v, _ in recs) for m, recs in per.items()}
for m, recs in per.items():
    print(f"median {m}: {med[m]:.0f} calls/s over {len(recs)} rounds, all correct: {all(c for _, c in recs)}")
for m in sorted(med):
    if m != "none" and "none" in med:
        print(f"ratio {m}/none: {med[m] / med['none']:.2f}")
EOF
    cat "$out/steady.txt"
    ;;
interference)
    runs=${4:-3}
    timeout 540 "$py" "$here/isolate_tuning.py" --lib "$lib" --runs "$runs" --out "$out/iso" \
        --variant alone --variant load --variant other_device 2>&1 | tail -n 60 >"$out/interference.txt"
    cp "$out/iso/summary.json" "$out/interference.json" 2>/dev/null
    "$py" - "$out/interference.json" <<'EOF' | tee -a "$out/interference.txt"
import json, sys
for name, v in json.load(open(sys.argv[1]))["variants"].items():
    print(f"{name}: runs {v['runs']}, interference reports per run {v['interference_reports']}, "
          f"median |timing error| vs alone {v['median_abs_rel_err_vs_alone']}, chosen {v['chosen']}")
EOF
    ;;
*)
    echo "two_gpus.sh: part must be races, steady or interference, not '$part'" >&2
    exit 2
    ;;
esac
