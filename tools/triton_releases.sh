#!/usr/bin/env bash
# tools/triton_releases.sh [list|make]: the Triton releases the reproducers run against
# (tests/repro/CMakeLists.txt, TG_TRITON_RELEASES), each in its own virtual environment
# under ${XDG_CACHE_HOME:-~/.cache}/tunerguard/triton-<triton>-py<python>.
#
#   list   print "<triton>=<python tag>=<venv python>" per release, made or not
#   list-ft  the same for the releases on the free-threaded interpreters (FT_RELEASES)
#   make   make each venv that is missing (pip install --no-deps triton==<ver>: one
#          wheel of well over 100 MB per release from the Python package index, 0.5 to
#          1 GB once installed); a venv already there is reused.  A release whose interpreter is missing or whose
#          wheel cannot be installed is said in one line and left out (its ctest
#          test is then SKIPPED and tools/dev test lists it).  A wheel already in the
#          wheel cache (~/.cache/tunerguard/wheels) is installed from there; a
#          free-threaded release's wheel is downloaded into it first.
#
# CPU only: nothing but the wheel is installed (`import triton` needs no GPU and
# no other package in these releases).
set -uo pipefail
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/tunerguard
PYENV=${PYENV_ROOT:-$HOME/.pyenv}/versions
# <triton>=<pyenv python version>: each wheel's supported interpreters, spread over the matrix
RELEASES="3.4.0=3.9.18 3.5.1=3.10.13 3.6.0=3.11.7 3.7.1=3.12.1 3.8.0=3.13.0 3.9.0=3.12.1"
# The same for the free-threaded interpreters, <triton>=<tag>: 3.13t is tools/dev py313t's
# python3.13t (TG_PY313T); Triton 3.4.0 is the release with a cp313t wheel.
FT_RELEASES="3.4.0=3.13t"
PY313T=${TG_PY313T:-$CACHE/py313t}
WHEELS=${TG_WHEEL_CACHE:-$CACHE/wheels}
interp_of() { case $1 in 3.13t) echo "$PY313T/bin/python3.13t" ;; *) echo "$PYENV/$1/bin/python" ;; esac; }
# what `import triton` needs besides the wheel: on Python 3.9, triton/backends/__init__.py
# imports the importlib_metadata backport (which needs zipp)
extras_for() { case $1 in 3.9.*) echo "importlib_metadata zipp" ;; esac; }

venv_of() { echo "$CACHE/triton-$1-py$2"; }

list() {
    local r t p
    for r in $1; do
        t=${r%%=*}; p=${r#*=}
        echo "$t=$p=$(venv_of "$t" "$p")/bin/python"
    done
}

make_one() {
    local t=$1 p=$2 dir tmp py
    py=$(interp_of "$p")
    local -a extras
    read -r -a extras <<<"$(extras_for "$p")"
    dir=$(venv_of "$t" "$p")
    [ -f "$dir/.complete" ] && return 0
    if [ ! -x "$py" ]; then
        echo "tools/triton_releases.sh: Triton $t: no interpreter $py; its reproducers will be SKIPPED" >&2
        return 1
    fi
    echo "tools/triton_releases.sh: Triton $t: pip install --no-deps triton==$t into $dir${extras[*]:+ with ${extras[*]}} (one wheel, well over 100 MB)" >&2
    mkdir -p "$CACHE"
    tmp=$(mktemp -d "$CACHE/.triton-$t-py$p.XXXXXX")
    local -a from=()
    local abi
    abi=cp$(echo "$p" | cut -d. -f1,2 | tr -d .)  # 3.13t: cp313t; 3.12.1: cp312
    if "$py" -m venv "$tmp" >/dev/null; then
        if [ "${p%t}" != "$p" ] && ! ls "$WHEELS/triton-$t-"*"-$abi-"*.whl >/dev/null 2>&1; then
            mkdir -p "$WHEELS"
            "$tmp/bin/python" -m pip download -q --no-deps --disable-pip-version-check --timeout 20 --retries 2 \
                --only-binary=:all: -d "$WHEELS" "triton==$t" >"$tmp/pip.log" 2>&1 || true
        fi
        # a wheel of this release for this interpreter in the cache: installed from there only
        ls "$WHEELS/triton-$t-"*"-$abi-"*.whl >/dev/null 2>&1 && from=(--no-index --find-links "$WHEELS")
    fi
    if [ -x "$tmp/bin/python" ] &&
       "$tmp/bin/python" -m pip install -q --no-deps --no-cache-dir "${from[@]}" "triton==$t" "${extras[@]}" \
           >>"$tmp/pip.log" 2>&1 &&
       "$tmp/bin/python" -c "import triton.runtime.autotuner" >>"$tmp/pip.log" 2>&1; then
        touch "$tmp/.complete"
        if [ -f "$dir/.complete" ]; then  # another run made it meanwhile: keep that one
            rm -rf "$tmp"
            return 0
        fi
        rm -rf "$dir"  # a venv left unfinished
        # venvs name their own path in bin/ scripts: write them where it will live
        mv -T "$tmp" "$dir" && "$py" -m venv --upgrade "$dir" >/dev/null
        return 0
    fi
    echo "tools/triton_releases.sh: Triton $t on Python $p could not be installed (last lines of pip):" >&2
    tail -n 3 "$tmp/pip.log" >&2
    rm -rf "$tmp"
    return 1
}

case "${1:-}" in
    list) list "$RELEASES" ;;
    list-ft) list "$FT_RELEASES" ;;
    make)
        rc=0
        for r in $RELEASES $FT_RELEASES; do make_one "${r%%=*}" "${r#*=}" || rc=1; done
        exit $rc ;;
    *) echo "usage: tools/triton_releases.sh list|list-ft|make" >&2; exit 2 ;;
esac
