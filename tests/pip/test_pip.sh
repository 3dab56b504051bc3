#!/bin/sh
# The pip way, as a user meets it:
#   sh tests/pip/test_pip.sh SOURCE_DIR
# From a copy of the clean tree (tracked and untracked-but-not-ignored files;
# no build/), with Debian's /usr/bin/python3 (python3-pip, python3-venv):
#   A. a venv made with --system-site-packages, `pip install
#      --no-build-isolation --no-index .`: the preload integration tests run
#      through the installed library on that interpreter, `python -m
#      tunerguard.path` and `tunerguard --lib` name the file in the venv,
#      `tunerguard run` preloads it, doctor finds it the same build;
#   B. `pip wheel --no-index .` (build isolation, as the README's `pip install
#      .` does): a platform-tagged wheel; the copy (source and build trees) is
#      deleted, the wheel goes into a second venv with `--no-deps --no-index`,
#      and the README's run line, with seeds004.py and the stand-in libcuda
#      from the package for train.py, passes under serialize (the race fails it
#      without tunerguard) and writes a report under detect; doctor flags
#      venv A's library as another build; `tunerguard repro` runs the
#      packaged reproducers.
# Prints "ok - ..." / "FAIL - ..." per check; exit 1 when any failed, 77 when
# there is no /usr/bin/python3.
set -u
SRC=$(cd "${1:?source dir}" && pwd)
PY=${TG_PIP_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || { echo "skip - no $PY"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tg-pip-test.XXXXXX")
WORK=$(readlink -f "$WORK")
trap 'rm -rf "$WORK"' EXIT
. "$SRC/tests/checks.sh"
# Nothing of the caller's tunerguard set-up leaks in; pip asks no index.
unset LD_PRELOAD TUNERGUARD_OPTIONS TUNERGUARD_LIB TUNERGUARD_SOURCE_DIR PYTHON PYTHONPATH VIRTUAL_ENV
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

# The README's two lines for users, between <!-- pip:begin --> and <!-- pip:end -->.
block=$(sed -n '/<!-- pip:begin -->/,/<!-- pip:end -->/p' "$SRC/README.md" | grep -v '^<!--' | grep -v '^```')
line1=$(printf '%s\n' "$block" | sed -n 1p | sed 's/[[:space:]]*#.*//')
line2=$(printf '%s\n' "$block" | sed -n 2p | sed 's/[[:space:]]*#.*//')
check "README's pip block has two lines" [ "$(printf '%s\n' "$block" | grep -c .)" = 2 ]
check "README's first pip line is 'pip install .' ($line1)" [ "$line1" = "pip install ." ]
case "$line2" in "tunerguard run --serialize -- python train.py") ok "README's second pip line runs train.py under serialize" ;;
    *) bad "README's second pip line runs train.py under serialize ($line2)" ;; esac

# The developers' block (between <!-- source:begin --> and <!-- source:end -->):
# tools/dev test (CI) runs its first line, cli/test_install its second.
sblock=$(sed -n '/<!-- source:begin -->/,/<!-- source:end -->/p' "$SRC/README.md" | grep -v '^<!--' | grep -v '^```')
s1=$(printf '%s\n' "$sblock" | sed -n 1p | sed 's/[[:space:]]*#.*//')
s2=$(printf '%s\n' "$sblock" | sed -n 2p | sed 's/[[:space:]]*#.*//')
case "$s1|$s2" in "tools/dev build|cmake --install build --prefix "*) ok "README's source block: tools/dev build, cmake --install build" ;;
    *) bad "README's source block: tools/dev build, cmake --install build ($s1 | $s2)" ;; esac

# ---- the copy of the clean tree -------------------------------------------
mkdir "$WORK/src"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh |
        tar --null -T - -cf -) | tar -xf - -C "$WORK/src"
else
    tar -C "$SRC" --exclude=./build --exclude='./build-*' -cf - . | tar -xf - -C "$WORK/src"
fi
check "the copy has pyproject.toml and no build/" [ -f "$WORK/src/pyproject.toml" -a ! -e "$WORK/src/build" ]

# ---- A: pip install --no-build-isolation . ----------------------------------
VA=$WORK/venv-a
"$PY" -m venv --system-site-packages "$VA" >"$WORK/venv-a.log" 2>&1 ||
    { show "$WORK/venv-a.log"; bad "$PY -m venv --system-site-packages (apt-get install python3-venv)"; exit 1; }
t0=$(date +%s)
(cd "$WORK/src" && "$VA/bin/pip" install --no-build-isolation --no-index .) >"$WORK/install-a.log" 2>&1
rc=$?
check "pip install --no-build-isolation --no-index . in a --system-site-packages venv of $PY ($(($(date +%s) - t0)) s)" [ $rc = 0 ]
[ $rc = 0 ] || { show "$WORK/install-a.log"; echo "$failures check(s) failed"; exit 1; }
LIB_A=$("$VA/bin/python" -m tunerguard.path)
case "$(readlink -f "$LIB_A")" in "$VA"/*) inside=1 ;; *) inside=0 ;; esac
check "python -m tunerguard.path names a file inside the venv ($LIB_A)" [ -f "$LIB_A" -a $inside = 1 ]
check "tunerguard --lib prints the same path" [ "$("$VA/bin/tunerguard" --lib)" = "$LIB_A" ]
check "python -m tunerguard --lib prints the same path" [ "$("$VA/bin/python" -m tunerguard --lib)" = "$LIB_A" ]
out=$("$VA/bin/tunerguard" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "tunerguard run preloads the packaged library" [ "$out" = "$LIB_A" ]
check "the man page is installed in the venv" [ -f "$VA/share/man/man1/tunerguard.1" ]
ver=$("$VA/bin/python" -c 'import importlib.metadata as m; print(m.version("tunerguard"))')
"$VA/bin/tunerguard" --version >"$WORK/version.out" 2>&1
check "tunerguard --version is the package's version ($ver)" has "$WORK/version.out" "^tunerguard $ver (build "
"$VA/bin/tunerguard" doctor >"$WORK/doctor-a.out" 2>&1
check "doctor: the packaged library, the same build" has "$WORK/doctor-a.out" "^OK    library and command are the same build"
check "doctor checks the venv's interpreter" has "$WORK/doctor-a.out" "^OK    --python: $VA/bin/python"
cd "$WORK"
"$PY" "$WORK/src/tests/integration/run_all.py" --lib "$LIB_A" --python "$VA/bin/python" >"$WORK/it.out" 2>&1
rc=$?
check "preload integration tests through the installed library on $VA/bin/python ($(grep -c '^PASS' "$WORK/it.out") passed)" [ $rc = 0 ]
[ $rc = 0 ] || grep -v '^PASS' "$WORK/it.out" | head -n 40
"$PY" "$WORK/src/tests/integration/run_all.py" --lib "$LIB_A" --python none --only nonpython >"$WORK/itn.out" 2>&1
check "preload integration tests, processes that are not Python" [ $? = 0 ]

# ---- B: pip wheel . , then a machine without the source -----------------------
t0=$(date +%s)
(cd "$WORK/src" && "$VA/bin/pip" wheel --no-index -w "$WORK/dist" .) >"$WORK/wheel.log" 2>&1
rc=$?
WHL=$(ls "$WORK"/dist/tunerguard-*.whl 2>/dev/null | head -n 1)
check "pip wheel --no-index . makes a wheel ($(($(date +%s) - t0)) s, $(wc -c <"${WHL:-/dev/null}") bytes)" [ $rc = 0 -a -n "$WHL" ]
[ -n "$WHL" ] || { show "$WORK/wheel.log"; echo "$failures check(s) failed"; exit 1; }
case "$(basename "$WHL")" in
    *-py3-none-manylinux_2_*_"$(uname -m)".whl | *-py3-none-linux_"$(uname -m)".whl) tagged=1 ;;
    *) tagged=0 ;; esac
check "the wheel is platform-tagged ($(basename "$WHL"))" [ $tagged = 1 ]
rm -rf "$WORK/src"
VB=$WORK/venv-b
"$PY" -m venv --system-site-packages "$VB" >/dev/null 2>&1
"$VB/bin/pip" install --no-deps --no-index "$WHL" >"$WORK/install-b.log" 2>&1
check "pip install --no-deps --no-index WHEEL into a second venv, the source tree gone" [ $? = 0 ]
PKG=$("$VB/bin/python" -c 'import tunerguard; print(tunerguard.package_dir())')
LIB_B=$("$VB/bin/python" -m tunerguard.path)
if command -v readelf >/dev/null 2>&1; then
    check "no RPATH/RUNPATH in the packaged ELF files" \
        [ "$(readelf -d "$LIB_B" "$PKG/tunerguard" 2>/dev/null | grep -c 'R.*PATH')" = 0 ]
fi
# train.py: the packaged seeds004.py (a link: Python puts the target's
# directory on sys.path, where its harness and the model of Triton are).
mkdir "$WORK/run" && ln -s "$PKG/tests/repro/scenarios/seeds004.py" "$WORK/run/train.py"
cd "$WORK/run"
export LD_LIBRARY_PATH="$PKG/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PATH="$VB/bin:$PATH" python train.py >none.out 2>&1
check "train.py (seeds004) fails without tunerguard" [ $? != 0 ]
PATH="$VB/bin:$PATH" sh -c "$line2" >serialize.out 2>&1
rc=$?
check "README's line: $line2 exits 0 with the packaged library" [ $rc = 0 ]
check "  and train.py passed (8 threads returned)" has serialize.out "repro seeds004: PASS"
[ $rc = 0 ] || show serialize.out
rm -f tunerguard.*
"$VB/bin/tunerguard" run -- "$VB/bin/python" train.py >detect.out 2>&1
rep=$(ls tunerguard.*.txt 2>/dev/null | head -n 1)
check "tunerguard run (detect) writes a race report (${rep:-none})" has "${rep:-/dev/null}" "SUMMARY: tunerguard: tuner race on 'test_seed004'"
TUNERGUARD_LIB=$LIB_A "$VB/bin/tunerguard" doctor >doctor-b.out 2>&1
check "doctor says when the library is another build" has doctor-b.out "^WARN  the library is build .*, this command is build "
"$VB/bin/tunerguard" repro seeds004 >repro.out 2>&1
check "tunerguard repro seeds004 runs the packaged reproducers (no source tree)" [ $? = 0 ]
has repro.out "all outcomes as expected" || show repro.out

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all checks passed"
