#!/usr/bin/env bash
# The guarded-call benchmark on every CPython found here (see bench/guard_bench.py).
set -u
lib=${1:?usage: tools/bench_guard.sh path/to/libtunerguard.so}
here=$(cd "$(dirname "$0")/.." && pwd)
for py in "$HOME"/.pyenv/versions/3.{9,10,11,12,13}*/bin/python /usr/bin/python3.11; do
    [ -x "$py" ] || continue
    printf '%-48s ' "$py"
    LD_PRELOAD="$lib" TUNERGUARD_OPTIONS=targets=guard_bench_mod:Guarded.run "$py" "$here/bench/guard_bench.py"
done
