#!/usr/bin/env bash
# The serialize benchmark's whole GPU measurement, in two device commands of
# under 10 minutes each (the targets: medians of rounds at 2, 4 and 8
# threads, the cold start, each key tuned once).
#
#   bash bench/serialize_gpu.sh small OUT   # 2 threads, 12 rounds (~9 min): the row nearest its target
#   bash bench/serialize_gpu.sh wide OUT    # 4 and 8 threads, 3 rounds, and the cold start (~9 min)
#   bash bench/serialize_gpu.sh model OUT   # the CPU model at 2, 4, 8 threads on this machine's 16 CPUs (~4 min)
#   bash bench/serialize_gpu.sh inproc OUT  # in-process ratios (serialize_cell.py --phase interleave):
#                                           # TG_INPROC_THREADS (2,4,8), TG_INPROC_ROUNDS processes a variant (3),
#                                           # TG_INPROC_INNER rounds of phases a process (12),
#                                           # TG_INPROC_STEPS per thread and phase (2500), TG_INPROC_PHASES
#                                           # (tg,none,lock; bare,barelock: none and lock with tunerguard's mode
#                                           # off, the baselines a row is judged by when it ran them),
#                                           # TG_INPROC_VARIANTS (none,detect,serialize)
#
# Carry build/libtunerguard.so and build/libtunerguard_core.so.  Each writes
# OUT/<part>.json (every cell, rewritten after each) and OUT/<part>.md (the
# tables).  Why 12 rounds at 2 threads: fresh processes of one thread alone
# spread from 27k to 44k calls/s on the H200 machine, and
# 4 rounds left serialize / best anywhere from 0.92x to 1.11x run to run.
# Each cell also measures its process's raw speed (serialize_cell.py, raw_rate:
# both kernels through kernel.fn, no tuner in the call); the "adjusted" table
# divides by it.
set -euo pipefail
part=${1:?small|wide|inproc|model}
out=${2:?OUT}
cd "$(dirname "$0")/.."
mkdir -p "$out"
export TG_BENCH_DIR=${TG_BENCH_DIR:-/tmp/tg-serialize-bench}
bench=(python3 bench/serialize_bench.py --backend gpu --steps 20000)
# The machine's hand-off cost and clock, beside the figures (bench/wake_latency.c; a few seconds).
if command -v cc >/dev/null && cc -O2 -pthread bench/wake_latency.c -o "$out/wake_latency" 2>/dev/null; then
    "$out/wake_latency" >"$out/machine-$part.md" 2>&1 || true
    rm -f "$out/wake_latency"
fi
# A bench command exits 1 when any of its cells failed: the part goes on to
# its next command and the tables all the same, and exits with that status.
rc=0
# TG_BENCH_EXTRA="NAME=MODE:LIB ...": other builds side by side (serialize_bench.py --extra); the
# words are paths, not patterns.
extra=()
set -f
for e in ${TG_BENCH_EXTRA:-}; do extra+=(--extra "$e"); done
set +f
case $part in
small)
    "${bench[@]}" --threads 2 --rounds 12 --variants none,lock,detect,serialize \
        --json "$out/small.json" >"$out/small.md" || rc=$? ;;
wide)
    "${bench[@]}" --threads 4,8 --rounds 3 --variants none,lock,detect,serialize \
        --json "$out/wide.json" >"$out/wide.md" || rc=$?
    "${bench[@]}" --threads 4,8 --rounds 2 --cold-only --variants none,lock,serialize \
        --json "$out/cold.json" >"$out/cold.md" || true ;;  # none dies of the race on cold keys: exit 1
inproc)
    # One process per variant (none = no preload, detect, serialize, TG_BENCH_EXTRA's builds), each
    # running tg / none / lock in phases that take turns: ratios free of the spread between fresh
    # processes.  The JSON is rewritten after every process: a run cut short keeps its cells.
    python3 bench/serialize_bench.py --backend gpu --interleave "${TG_INPROC_PHASES:-tg,none,lock}" \
        --steps "${TG_INPROC_STEPS:-2500}" --inner-rounds "${TG_INPROC_INNER:-12}" \
        --threads "${TG_INPROC_THREADS:-2,4,8}" --rounds "${TG_INPROC_ROUNDS:-3}" --variants "${TG_INPROC_VARIANTS:-none,detect,serialize}" \
        ${extra[@]+"${extra[@]}"} --json "$out/inproc.json" >"$out/inproc.md" || rc=$? ;;
model)
    # The CPU model (stand-in libcuda, no GPU) on this machine's cores: what tunerguard's own
    # code costs at 2, 4 and 8 threads on as many CPUs, without the GPU's spread (the model's
    # launch lets the GIL go as Triton's does).  Also carry build/tests/fakecuda.
    # (~4 min, a minute more for each build of TG_BENCH_EXTRA)
    python3 bench/serialize_bench.py --backend cpu --steps 20000 --threads 2,4,8 --rounds 5 \
        --variants none,lock,detect,serialize ${extra[@]+"${extra[@]}"} --json "$out/model.json" \
        >"$out/model.md" || rc=$? ;;
*)
    echo "bench/serialize_gpu.sh: unknown part '$part' (small, wide, inproc or model)" >&2
    exit 2 ;;
esac
cat "$out"/*.md
exit "$rc"
