#!/bin/sh
# tests/pytest/deps.sh PYTHON [wheels]: print the folder that holds pytest,
# pytest-run-parallel, pytest-xdist and pytest-timeout for PYTHON (to put on
# PYTHONPATH), installing them there from the Python package index the first
# time (pip install --target, pure-Python wheels, a few MB), cached under
# ${XDG_CACHE_HOME:-~/.cache}/tunerguard/pytest-py<version>; with `wheels`,
# the folder of their wheels instead (pip download, for
# `pip install --no-index --find-links`), pytest-wheels-py<version>.
# Exit 77 with one line when they cannot be fetched (no network, no pip).
set -u
PY=${1:?python}
ver=$("$PY" -c 'import platform; print(platform.python_version())' 2>/dev/null) ||
    { echo "tests/pytest/deps.sh: SKIPPED: $PY does not run" >&2; exit 77; }
dir=${XDG_CACHE_HOME:-$HOME/.cache}/tunerguard/pytest-py$ver
how="install --target"
[ "${2:-}" = wheels ] && { dir=${XDG_CACHE_HOME:-$HOME/.cache}/tunerguard/pytest-wheels-py$ver; how="download -d"; }
if [ ! -f "$dir/.complete" ]; then
    mkdir -p "$(dirname "$dir")"
    tmp=$(mktemp -d "$dir.XXXXXX")
    if ! "$PY" -m pip $how "$tmp" -q --disable-pip-version-check --no-cache-dir \
            pytest pytest-run-parallel pytest-xdist pytest-timeout >"$tmp.log" 2>&1; then
        echo "tests/pytest/deps.sh: SKIPPED: pip could not fetch pytest and its plugins for $PY ($(tail -n 1 "$tmp.log"))" >&2
        rm -rf "$tmp" "$tmp.log"
        exit 77
    fi
    rm -f "$tmp.log"
    touch "$tmp/.complete"
    if [ -f "$dir/.complete" ]; then rm -rf "$tmp"; else rm -rf "$dir"; mv -T "$tmp" "$dir"; fi
fi
echo "$dir"
