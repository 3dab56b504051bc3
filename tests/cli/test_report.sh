# tunerguard report: several processes and ranks, --json, text fallback, --trace merge.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
export LD_LIBRARY_PATH=$FAKE
RANK=0 "$TG" run --report-dir "$WORK/r" -- python3 "$SCEN/hammer.py" >/dev/null 2>&1
RANK=1 "$TG" run --report-dir "$WORK/r" -- python3 "$SCEN/hammer.py" >/dev/null 2>&1
env -u RANK "$TG" run --report-dir "$WORK/r" -- python3 "$SCEN/seeds004.py" >/dev/null 2>&1
check "fixtures: rank-named and plain report files" sh -c "ls r/tunerguard.rank0.*.jsonl r/tunerguard.rank1.*.jsonl >/dev/null && ls r | grep -q '^tunerguard\.[0-9]*\.jsonl$'"

run_tg t report r
check "races found: exit 1" [ "$rc" = 1 ]
check "three processes, ranks 0 1" has t.out "3 processes, ranks 0 1"
check "hammer_kernel: 2 races from 2 processes" sh -c "grep -q \"kernel 'hammer_kernel': 2 races (2 high\" t.out"
check "test_seed004 listed" has t.out "kernel 'test_seed004': 1 race"
check "first occurrence names a file" sh -c "grep -q '^  first: ts_ns=[0-9]* pid [0-9]* in r/tunerguard' t.out"
check "SUMMARY lines with counts" sh -c "grep -q '^ *2x SUMMARY: tunerguard: tuner race on .hammer_kernel.' t.out"

run_tg j report --json r
check "--json: exit 1" [ "$rc" = 1 ]
cat >chk.py <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = {e["kernel"]: e for e in d["kernels"]}
assert d["races"] == 3, d["races"]
assert sorted(d["ranks"]) == [0, 1], d["ranks"]
assert len(d["processes"]) == 3
h = k["hammer_kernel"]
assert h["races"] == 2 and sorted(h["ranks"]) == [0, 1] and len(h["pids"]) == 2, h
assert h["first"]["file"].endswith(".jsonl") and isinstance(h["first"]["ts_ns"], int)
first = min(json.loads(l)["ts_ns"] for f in sys.argv[2:] for l in open(f) if l.startswith("{") and '"hammer_kernel"' in l)
assert h["first"]["ts_ns"] == first, (h["first"], first)
assert any("SUMMARY: tunerguard:" in s["line"] for s in d["summary_lines"])
PY
check "--json: valid, counts, ranks, earliest ts_ns" python3 chk.py j.out r/tunerguard.rank*.jsonl

run_tg one report r/tunerguard.rank1.*.jsonl
check "a single file: one process, rank 1" sh -c "[ $rc = 1 ] && grep -q '1 process, ranks 1' one.out"

mkdir txt && cp r/*.txt txt/
run_tg tx report txt
check "text fallback (no .jsonl): races per kernel" sh -c "[ $rc = 1 ] && grep -q \"kernel 'hammer_kernel': 2 races\" tx.out && grep -q '3 processes' tx.out"

mkdir empty
run_tg e report empty
check "no report files: exit 2" sh -c "[ $rc = 2 ] && grep -q 'no report files' e.err"
run_tg n report
check "no path: exit 2 + usage" sh -c "[ $rc = 2 ] && grep -q '^usage: tunerguard report' n.err"
run_tg m report --trace
check "--trace without OUT: exit 2" [ "$rc" = 2 ]

mkdir clean
printf '%s\n' '{"schema":1,"kind":"method_replaced","seq":1,"pid":5,"rank":null,"mode":"detect","ts_ns":1,"tuner":{},"location":null,"entering":{},"detail":"x"}' '{"schema":1,"kind":"race","pid":5,' >clean/tg.5.jsonl
run_tg c report clean
check "no race: exit 0; a cut last line is skipped" sh -c "[ $rc = 0 ] && grep -q '0 races' c.out && grep -q '1 unreadable line' c.out"

mkdir tr
printf '[{"name":"a","ph":"X","ts":1,"dur":2,"pid":1,"tid":1},\n{"name":"b","ph":"X","ts":3,"dur":2,"pid":1,"tid":1},\n{"name":"c","ph":"X","ts' >tr/tg.1.trace.json
printf '{"traceEvents":[{"name":"d","ph":"i","ts":5,"pid":2,"tid":2,"s":"t","args":{"k":"]}"}}],"displayTimeUnit":"ns"}' >tr/tg.2.trace.json
printf '[{"name":"e","ph":"i","ts":6,"pid":3,"tid":3,"s":"t"}]' >tr/tg.rank1.3.trace.json
run_tg tr report --trace merged.json tr
check "--trace: exit 0 when only traces" [ "$rc" = 0 ]
check "--trace: truncated file tolerated and reported" has tr.err "truncated; kept its 2 complete events"
check "--trace: merged file is valid JSON with all complete events" python3 -c "
import json; d = json.load(open('merged.json')); n = sorted(e['name'] for e in d['traceEvents']); assert n == ['a','b','d','e','process_labels'], n"

# real trace files from two ranks (a library with trace=1)
RANK=0 "$TG" run --trace --report-dir "$WORK/rt" -- python3 "$SCEN/hammer.py" >/dev/null 2>rt0.err
if grep -q "unknown option 'trace'" rt0.err; then
    echo "skip - this library has no trace option"
else
    RANK=1 "$TG" run --trace --report-dir "$WORK/rt" -- python3 "$SCEN/hammer.py" >/dev/null 2>rt1.err
    check "run --trace lists the trace file" grep -q '^tunerguard: report: .*/tunerguard\.rank0\.[0-9]*\.trace\.json$' rt0.err
    run_tg rtm report --trace rt.json rt
    check "report --trace on two ranks: races exit 1, merged file written" sh -c "[ $rc = 1 ] && grep -q 'wrote rt.json: [0-9]* events from 2 trace files' rtm.err"
    check "merged trace: both processes, rank labels, a race event from each" python3 -c "
import json; ev = json.load(open('rt.json'))['traceEvents']
pids = {e['pid'] for e in ev}
assert len(pids) == 2, pids
labels = sorted(e['args']['labels'] for e in ev if e.get('name') == 'process_labels')
assert labels == ['rank 0', 'rank 1'], labels
assert {e['pid'] for e in ev if e.get('name') == 'race'} == pids"
fi
finish
