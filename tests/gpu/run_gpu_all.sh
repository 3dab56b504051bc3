#!/usr/bin/env bash
# Every GPU check in one go (the device tool's runs are few and costly).
#   tests/gpu/run_gpu_all.sh LIB OUTDIR
# OUTDIR gets: summary.txt reports.txt reports.jsonl log.txt (scenarios),
# checks.txt (counts, latency, stress, trace, isolate_tuning), trace.json.
set -u
lib=$(readlink -f "${1:?LIB}")
out=${2:?OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
checks="$out/checks.txt"
: >"$checks"
say() { echo "$*" | tee -a "$checks"; }

say "== versions: $($py -c 'import sys,torch,triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"

# ISO_RUNS=N: only the isolate_tuning measurement (it takes minutes), plus one
# stress=1 report kept to show the thread inside blocked in its synchronize.
if [ "${ISO_RUNS:-0}" -gt 0 ]; then
    say "== isolate_tuning, $ISO_RUNS runs per variant"
    iso=$(mktemp -d)
    timeout 420 "$py" "$here/isolate_tuning.py" --lib "$lib" --runs "$ISO_RUNS" --out "$iso" 2>&1 | tail -n 40 | tee -a "$checks"
    cp "$iso/summary.json" "$out/isolate_summary.json" 2>/dev/null
    w=$(mktemp -d)
    (cd "$w" && TRITON_CACHE_DIR="$w/c" LD_PRELOAD="$lib" TUNERGUARD_OPTIONS="stress=1:log_path=$w/tg" \
        timeout 300 "$py" "$here/triton_races.py" bench_small) >"$w/o" 2>&1
    say "bench_small stress: exit $?, $(grep -c 'WARNING: tunerguard' "$w"/tg.*.txt 2>/dev/null) reports; $(grep -h 'Last CUDA call' "$w"/tg.*.txt | head -n 2)"
    cat "$w"/tg.*.txt >"$out/stress_report.txt" 2>/dev/null
    exit 0
fi

say "== CUDA counts: N Triton launches, M synchronizes, one matmul"
work=$(mktemp -d)
(cd "$work" && TRITON_CACHE_DIR="$work/c" LD_PRELOAD="$lib" "$py" "$here/cuda_counts.py") 2>&1 | tee -a "$checks"

say "== host launch latency, alternating without/with the preload (ns per launch, best of 5 x 20000)"
for round in 1 2 3; do
    for mode in none preload; do
        env=(TRITON_CACHE_DIR="$work/c")
        [ "$mode" = preload ] && env+=(LD_PRELOAD="$lib")
        (cd "$work" && env "${env[@]}" "$py" "$here/launch_latency.py") 2>&1 | sed "s/^/round $round $mode: /" | tee -a "$checks"
    done
done

say "== stress=1: 2 threads, 2 configs, detect; then a race-free script"
for i in 1 2 3 4 5; do
    w=$(mktemp -d)
    (cd "$w" && TRITON_CACHE_DIR="$w/c" LD_PRELOAD="$lib" TUNERGUARD_OPTIONS="stress=1:log_path=$w/tg" \
        timeout 300 "$py" "$here/triton_races.py" small) >"$w/o" 2>&1
    say "small stress run $i: exit $? report $(ls "$w"/tg.*.txt >/dev/null 2>&1 && echo yes || echo no)"
    w2=$(mktemp -d)
    (cd "$w2" && TRITON_CACHE_DIR="$w2/c" timeout 300 "$py" "$here/triton_races.py" small) >"$w2/o" 2>&1
    say "small no-tunerguard run $i: exit $?"
done
for i in 1 2; do
    w=$(mktemp -d)
    (cd "$w" && TRITON_CACHE_DIR="$w/c" LD_PRELOAD="$lib" TUNERGUARD_OPTIONS="stress=1:log_path=$w/tg" \
        timeout 300 "$py" "$here/triton_races.py" race_free) >"$w/o" 2>&1
    say "race_free stress run $i: exit $? report $(ls "$w"/tg.*.txt >/dev/null 2>&1 && echo yes || echo no)"
done

say "== trace=1 on the hammer scenario (detect)"
w=$(mktemp -d)
(cd "$w" && TRITON_CACHE_DIR="$w/c" LD_PRELOAD="$lib" TUNERGUARD_OPTIONS="trace=1:log_path=$w/tg" \
    timeout 300 "$py" "$here/triton_races.py" hammer) >"$w/o" 2>&1
tr=$(ls "$w"/tg.*.trace.json 2>/dev/null | head -n 1)
if [ -n "$tr" ]; then
    cp "$tr" "$out/trace.json"
    say "trace: $(wc -c <"$tr") bytes; $($py "$here/../unit/check_trace.py" "$tr" 2>&1 | tail -n 1)"
    grep "Last CUDA call" "$w"/tg.*.txt | head -n 3 | tee -a "$checks"
else
    say "trace: no file"
fi


say "== race scenarios: none / detect / serialize, cold cache each run"
timeout 420 "$here/run_gpu.sh" "$lib" "$out" seeds004:3 hammer:2 cached_subclass:1 reset_to_zero:2 >/dev/null 2>&1
cat "$out/summary.txt" >>"$checks"
