#!/usr/bin/env bash
# flash-linear-attention imported from a source folder on PYTHONPATH, as
# people who work on kernel libraries run it: the call sites a report names
# must be the program's lines (tests/gpu/fla_model.py), never fla's, and
# serialize must write one "prevented" report for all the kernels a forward
# tunes (they are reached through fla's lines, from one line of the program).
#
#   tests/gpu/fla_source_callsite.sh LIB OUTDIR WHEELDIR
#
# WHEELDIR: flash_linear_attention-*.whl and fla_core-*.whl (and einops-*.whl
# when einops does not import), unpacked into one folder, their .dist-info
# folders removed (a source checkout has none), that folder put first on
# PYTHONPATH; `fla` must import from there (checked).  The GPU machine's
# interpreter (PYTHON, default python3) brings torch, Triton and transformers.
# Runs fla_model.py (two GatedDeltaNet copies forward from two threads, cold
# Triton cache) in detect mode and in serialize mode.  Writes
# OUTDIR/summary.txt (a PASS/FAIL line per check) and each mode's report
# files and stderr.  Exit 0 when every check passed.
set -u
lib=$(readlink -f "${1:?LIB}")
out=$(mkdir -p "${2:?OUTDIR}" && cd "$2" && pwd)
wheels=$(cd "${3:?WHEELDIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
summary=$out/summary.txt
: >"$summary"

src=$(mktemp -d)/src
mkdir -p "$src"
pats="flash_linear_attention-*.whl fla_core-*.whl"
"$py" -c 'import einops' 2>/dev/null || pats="$pats einops-*.whl"
for pat in $pats; do
    w=$(ls "$wheels"/$pat 2>/dev/null | head -n 1)
    [ -n "$w" ] || { echo "FAIL no $pat in $wheels" | tee -a "$summary"; exit 1; }
    "$py" -m zipfile -e "$w" "$src" || exit 2
done
rm -rf "$src"/*.dist-info
where=$(cd /tmp && PYTHONPATH="$src" "$py" -c 'import fla; print(fla.__file__)' 2>&1)
case "$where" in
"$src"/fla/__init__.py) echo "PASS fla imports from the source folder: $where" >>"$summary" ;;
*) echo "FAIL fla does not import from $src: $where" | tee -a "$summary"; exit 1 ;;
esac

for mode in detect serialize; do
    work=$(mktemp -d)
    (cd "$work" && env TRITON_CACHE_DIR="$work/cache" PYTHONUNBUFFERED=1 PYTHONPATH="$src" LD_PRELOAD="$lib" \
        TUNERGUARD_OPTIONS="mode=$mode:log_path=$work/tg" timeout 400 "$py" "$here/fla_model.py") \
        >"$work/stdout" 2>"$work/stderr"
    echo "$?" >"$work/rc"
    mkdir -p "$out/$mode"
    cp "$work"/stderr "$work"/rc "$out/$mode/"
    cp "$work"/tg.* "$out/$mode/" 2>/dev/null
    rm -rf "$work"
done

"$py" - "$out" "$here/fla_model.py" >>"$summary" <<'EOF'
import glob, json, os, re, sys

out, script = sys.argv[1], sys.argv[2]
name = os.path.basename(script)


def files(mode, ext):
    return sorted(glob.glob(os.path.join(out, mode, "tg.*" + ext)))


def check(what, cond, detail=""):
    print("%s %s%s" % ("PASS" if cond else "FAIL", what, "" if cond else ": " + detail))


for mode in ("detect", "serialize"):
    text = "".join(open(f).read() for f in files(mode, ".txt"))
    recs = [json.loads(l) for f in files(mode, ".jsonl") for l in open(f)]
    races = [b for b in re.findall(r"^WARNING: tunerguard: .*?^SUMMARY:[^\n]*", text, re.M | re.S)
             if "\n  In short: " in b]
    check("%s: a race report" % mode, races, "no report; stderr in %s/%s/stderr" % (out, mode))
    sites, bad = set(), []
    for b in races:
        short = re.search(r"In short:.*?\n  What it does", b, re.S).group(0)
        todo = re.search(r"^  What to do:[^\n]*", b, re.M).group(0)
        named = re.findall(r"(?:called by thread '[^']*' at|called at) (\S+):(\d+)", short)
        named += re.findall(r"(?:call|around) (\S+):(\d+)", todo)
        for f, line in named:
            (sites if os.path.basename(f) == name else bad).add("%s:%s" % (f, line))
    check("%s: every call site named is %s's line (%s)" % (mode, name, ", ".join(sorted(sites))),
          sites and not bad, "others named: %s" % ", ".join(sorted(bad)))
    locs = [r.get("location") or {} for r in recs if r.get("kind") == "race"]
    check("%s: every JSON location is in %s" % (mode, name),
          locs and all(os.path.basename(str(l.get("file"))) == name for l in locs), json.dumps(locs)[:400])
    check("%s: fla's frames folded" % mode, re.search(r"\[\d+ library frames: ", text) is not None)
    if mode == "serialize":
        prevented = [r for r in recs if r.get("kind") == "race" and r.get("serialized")]
        rc = open(os.path.join(out, mode, "rc")).read().strip()
        check("serialize: the program passed (exit %s)" % rc, rc == "0")
        others = [r.get("other_kernels") for r in recs if r.get("kind") == "repeats" and r.get("serialized", True)]
        check("serialize: one prevented report (other kernels at the same call sites: %s)" % others,
              len(prevented) == 1 and text.count("WARNING: tunerguard: race prevented (serialize)") == 1,
              "%d prevented reports" % len(prevented))
EOF
cat "$summary"
! grep -q '^FAIL' "$summary"
