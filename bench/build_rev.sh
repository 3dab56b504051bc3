#!/usr/bin/env bash
# Build the two libraries of another revision, for a side-by-side run
# (serialize_bench.py --extra NAME=MODE:DIR/libtunerguard.so, or
# TG_BENCH_EXTRA for bench/serialize_gpu.sh model).
#
#   bash bench/build_rev.sh REV DIR     # e.g. bash bench/build_rev.sh ded4613 build/old
#   TG_REV_CFLAGS=-DTG_TURN_SLICE_NS=1000000ull bash bench/build_rev.sh HEAD build/s1
#                                       # the same sources with a compile-time knob changed
#
# The revision's sources go to DIR/src (git archive), its build to DIR; the
# build type is this checkout's (RelWithDebInfo unless build/ says otherwise),
# so the two builds differ only in their sources (and TG_REV_CFLAGS, when given).  Run it here and carry DIR:
# the GPU machine has no libunwind-dev.
set -euo pipefail
rev=${1:?REV}
dir=${2:?DIR}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac # from where it was called, not the checkout
cd "$(dirname "$0")/.."
if [ "$(readlink -f "$dir")" = "$(readlink -f build)" ] || [ "$(readlink -f "$dir")" = "$PWD" ]; then
    echo "bench/build_rev.sh: $dir is this checkout's own build or the checkout itself: name another folder" >&2
    exit 2
fi
type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' build/CMakeCache.txt 2>/dev/null || true)
rm -rf "$dir"
mkdir -p "$dir/src"
git archive "$rev" | tar -x -C "$dir/src"
cmake -S "$dir/src" -B "$dir" -DCMAKE_BUILD_TYPE="${type:-RelWithDebInfo}" -DCMAKE_C_FLAGS="${TG_REV_CFLAGS:-}" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target tunerguard tunerguard_core >/dev/null
rm -rf "$dir/src"
ls -l "$dir/libtunerguard.so" "$dir/libtunerguard_core.so"
