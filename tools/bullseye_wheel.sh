#!/bin/sh
# The portable wheel: built inside the Debian 11 (bullseye, glibc 2.31) root
# that `tools/dev bullseye-root` makes, as manylinux images build, so that the
# library, its core and the command ask for nothing newer than glibc 2.28.
#
#   tools/bullseye_wheel.sh ROOT OUTDIR [CUDA_INCLUDE]
#
# The source tree (this checkout) is bound into ROOT read as it is and built
# there by the in-tree backend (python/tunerguard_build.py, build tree in the
# root's /tmp) with TG_WHEEL_GLIBC=2.28: the wheel is tagged
# manylinux_2_28_<arch>, and the build fails, naming the symbols, where a file
# needs a newer glibc.  cuda.h and cupti.h (types and prototypes only) come
# from the host's CUDA_INCLUDE (default: where the host build found them):
# the headers they include are copied into a folder bound into the root.
# Prints the wheel's path last.  Exit status: 0 made; 1 failed; 77 with one
# line "SKIP: ..." when the root cannot be entered (not root, no root made).
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${1:?root}
OUT=${2:?output folder}
INC=${3:-}
skip() { echo "SKIP: bullseye wheel: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "building in $ROOT needs root (chroot, mount)"
[ -x "$ROOT/usr/bin/cmake" ] || skip "no Debian 11 root at $ROOT (tools/dev bullseye-root makes it)"
command -v gcc >/dev/null || { echo "bullseye wheel: no gcc here (it lists the CUDA headers to copy into the root)" >&2; exit 1; }
if [ -z "$INC" ]; then
    for d in /usr/local/cuda/include /usr/local/cuda-13.0/include /usr/local/include /usr/include; do
        [ -f "$d/cuda.h" ] && { INC=$d; break; }
    done
fi
[ -n "$INC" ] && [ -f "$INC/cuda.h" ] && [ -f "$INC/cupti.h" ] ||
    { echo "bullseye wheel: no cuda.h and cupti.h in '${INC:-/usr/local/cuda/include}' (the CUDA toolkit's headers)" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/tg-cuda-include.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
# The headers cuda.h and cupti.h pull in from INC, links resolved.
printf '#include <cuda.h>\n#include <cupti.h>\n' | gcc -M -I"$INC" -x c - | tr ' \\' '\n\n' |
    grep "^$INC/" | sort -u | while read -r h; do
        rel=${h#"$INC"/}
        mkdir -p "$STAGE/$(dirname "$rel")"
        cp -L "$h" "$STAGE/$rel"
    done
[ -f "$STAGE/cuda.h" ] || { echo "bullseye wheel: could not copy cuda.h from $INC" >&2; exit 1; }
rm -f "$OUT"/tunerguard-*.whl
# find_path searches CMAKE_INCLUDE_PATH before its PATHS (CMakeLists.txt).
CMAKE_INCLUDE_PATH=$STAGE TG_WHEEL_GLIBC=2.28 PYTHONDONTWRITEBYTECODE=1 \
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    python3 "$SRC/tests/chroot/run_in_root.py" --root "$ROOT" --bind "$SRC" --bind "$OUT" --bind "$STAGE" -- \
    /usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import tunerguard_build as b; print(b.build_wheel(sys.argv[2]))' \
    "$SRC/python" "$OUT" >"$OUT/build.log" 2>&1 || {
        rc=$?
        tail -n 30 "$OUT/build.log" >&2
        [ $rc = 77 ] && skip "$(grep '^run_in_root: SKIPPED' "$OUT/build.log" | tail -n 1)"
        echo "bullseye wheel: the build in $ROOT FAILED (log: $OUT/build.log)" >&2
        exit 1
    }
whl=$(ls "$OUT"/tunerguard-*.whl)
echo "$whl"
