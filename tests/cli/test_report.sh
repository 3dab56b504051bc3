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
check "first occurrence: local date and time, names a file" sh -c "grep -q '^  first: [0-9]\{4\}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9], pid [0-9]* in r/tunerguard' t.out"
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
check "no race but a cut last line: exit 4 (incomplete), the file named once, the line counted" sh -c "[ $rc = 4 ] && grep -q '0 races' c.out && grep -q '1 unreadable line' c.out && [ \$(wc -l <c.err) = 1 ] && grep -q '^tunerguard: clean/tg.5.jsonl: truncated: its last line is cut short' c.err"
printf '%s\n' '{"schema":1,"kind":"method_replaced","seq":1,"pid":6,"rank":null,"mode":"detect","ts_ns":1,"tuner":{},"location":null,"entering":{},"detail":"x"}' >clean/tg.6.jsonl
run_tg c0 report clean/tg.6.jsonl
check "no race, every file complete: exit 0, nothing on stderr" sh -c "[ $rc = 0 ] && grep -q '0 races' c0.out && [ ! -s c0.err ]"

mkdir tr
printf '[{"name":"a","ph":"X","ts":1,"dur":2,"pid":1,"tid":1},\n{"name":"b","ph":"X","ts":3,"dur":2,"pid":1,"tid":1},\n{"name":"c","ph":"X","ts' >tr/tg.1.trace.json
printf '{"traceEvents":[{"name":"d","ph":"i","ts":5,"pid":2,"tid":2,"s":"t","args":{"k":"]}"}}],"displayTimeUnit":"ns"}' >tr/tg.2.trace.json
printf '[{"name":"e","ph":"i","ts":6,"pid":3,"tid":3,"s":"t"}]' >tr/tg.rank1.3.trace.json
run_tg tr report --trace merged.json tr
check "--trace: only traces, one of them cut short: exit 4 (incomplete)" [ "$rc" = 4 ]
check "--trace: truncated file tolerated and reported" has tr.err "truncated; kept its 2 complete events"
check "--trace: merged file is valid JSON with all complete events" python3 -c "
import json; d = json.load(open('merged.json')); n = sorted(e['name'] for e in d['traceEvents']); assert n == ['a','b','d','e','process_labels'], n"

# --trace OUT at a FIFO or a symlink: written beside it and renamed over it (it hung on the FIFO,
# and wrote through the link into its target before)
mkfifo trfifo
echo keep >trvictim
ln -s trvictim trlink
( timeout 20 "$TG" report --trace trfifo tr >trf.out 2>trf.err; echo $? >trf.rc )
check "--trace OUT a FIFO: no hang, OUT now a regular file with the merge" sh -c \
  "[ \$(cat trf.rc) = 4 ] && [ -f trfifo ] && [ ! -p trfifo ] && grep -q traceEvents trfifo"
run_tg trl report --trace trlink tr
check "--trace OUT a symlink: its target untouched, the link replaced by the merge" sh -c \
  "[ $rc = 4 ] && [ \"\$(cat trvictim)\" = keep ] && [ ! -L trlink ] && grep -q traceEvents trlink"
check "--trace: no temporary file left beside OUT" sh -c "! ls | grep -q '\\.tmp\\.'"

# fatal records: processes that died of a fatal signal, linked to their races (hand-written fixtures)
fsec() { awk '/ died of a fatal signal:$/ {p = 1} p && /^$/ {exit} p' "$1" >"$1.sec"; }
mkdir fa fb fc fd fe
# rank 3: two races, then SIGSEGV inside the first race's call (kernel by race_seq); tid 4251 was inside the second
printf '%s\n' \
 '{"schema":1,"kind":"race","seq":1,"pid":4242,"rank":3,"mode":"detect","ts_ns":1000,"severity":"high","serialized":false,"tuner":{"class":"Autotuner","method":"Autotuner.run","kernel":"matmul_kernel","instance":"0x7f3a1c2b4d10"},"location":{"file":"train.py","line":12,"func":"step"},"entering":{}}' \
 '{"schema":1,"kind":"race","seq":2,"pid":4242,"rank":3,"mode":"detect","ts_ns":1100,"severity":"low","serialized":false,"tuner":{"class":"Autotuner","method":"Autotuner.run","kernel":"softmax_kernel","instance":"0x7f3a1c2b5000"},"location":null,"entering":{}}' \
 '{"schema":1,"kind":"fatal","seq":3,"pid":4242,"rank":3,"mode":"detect","ts_ns":123456789,"tuner":{"class":null,"method":null,"kernel":null,"instance":"0x7f3a1c2b4d10"},"location":null,"entering":null,"signal":"SIGSEGV","signo":11,"si_code":1,"fault_addr":"0x8","tid":4250,"native":[{"pc":"0x7f3a1c09cb84","symbol":"?? (libc.so.6+0x9cb84)","file":null,"line":null}],"tuners":[{"instance":"0x7f3a1c2b4d10","occupants":[{"tid":4250,"inside_ns":1200000,"depth":2,"race_seq":1}],"waiters":1},{"instance":"0x7f3a1c2b5000","occupants":[{"tid":4251,"inside_ns":5000,"depth":1,"race_seq":2},{"tid":4252,"inside_ns":10,"depth":1,"race_seq":null}],"waiters":0}],"race_seq":1,"reports_before":2}' \
 >fa/tunerguard.rank3.4242.jsonl
# no rank, no race: SIGABRT outside any tuner
printf '%s\n' '{"schema":1,"kind":"fatal","seq":1,"pid":77,"rank":null,"mode":"serialize","ts_ns":5,"tuner":null,"location":null,"entering":null,"signal":"SIGABRT","signo":6,"si_code":-6,"fault_addr":null,"tid":78,"native":[],"tuners":[],"race_seq":null,"reports_before":0}' >fb/tg.77.jsonl
# rank 0: this call did not race (race_seq null) but its tuner did (kernel by instance)
printf '%s\n' \
 '{"schema":1,"kind":"race","seq":1,"pid":500,"rank":0,"mode":"detect","ts_ns":10,"severity":"high","serialized":false,"tuner":{"class":"Autotuner","method":"Autotuner.run","kernel":"add_kernel","instance":"0xab0"},"location":null,"entering":{}}' \
 '{"schema":1,"kind":"method_replaced","seq":2,"pid":500,"rank":0,"mode":"detect","ts_ns":11,"tuner":{},"location":null,"entering":{},"detail":"x"}' \
 '{"schema":1,"kind":"fatal","seq":3,"pid":500,"rank":0,"mode":"detect","ts_ns":12,"tuner":{"class":null,"method":null,"kernel":null,"instance":"0xAB0"},"location":null,"entering":null,"signal":"SIGBUS","signo":7,"si_code":2,"fault_addr":"0x7f0000001000","tid":501,"native":[],"tuners":[{"instance":"0xAB0","occupants":[{"tid":501,"inside_ns":1,"depth":1,"race_seq":null}],"waiters":0}],"race_seq":null,"reports_before":2}' \
 >fc/tg.rank0.500.jsonl

run_tg fa report fa
check "fatal: race + fatal in one process: exit 1" [ "$rc" = 1 ]
check "fatal: counted on the header line" has fa.out '^2 races: 1 high, 1 low, 0 serialized; 1 fatal signal$'
fsec fa.out
cat >fa.exp <<'EOF'
1 process died of a fatal signal:
  pid 4242 rank 3: SIGSEGV (fault address 0x8) in tid 4250, inside kernel 'matmul_kernel' in the call that raced (race report #1 of that process); 2 reports before it; file fa/tunerguard.rank3.4242.jsonl
    tid 4251 was inside kernel 'softmax_kernel' (race report #2)
EOF
check "fatal: kernel named by race_seq, another thread in a raced tuner" diff -u fa.exp fa.out.sec
check "fatal: section after the kernel sections" sh -c "sed -n \"/^kernel 'softmax_kernel'/,\\\$p\" fa.out | grep -q 'died of a fatal signal'"

run_tg fb report fb
check "fatal alone (no race) is something found: exit 1" [ "$rc" = 1 ]
check "fatal alone: header line" has fb.out '^0 races: 0 high, 0 low, 0 serialized; 1 fatal signal$'
fsec fb.out
cat >fb.exp <<'EOF'
1 process died of a fatal signal:
  pid 77: SIGABRT in tid 78, not inside a tuner; no report before it; file fb/tg.77.jsonl
EOF
check "fatal: tuner null -> not inside a tuner, no fault address" diff -u fb.exp fb.out.sec

run_tg fc report fc
fsec fc.out
cat >fc.exp <<'EOF'
1 process died of a fatal signal:
  pid 500 rank 0: SIGBUS (fault address 0x7f0000001000) in tid 501, inside kernel 'add_kernel' (this call did not race; that tuner last raced in race report #1 of that process); 2 reports before it; file fc/tg.rank0.500.jsonl
EOF
check "fatal: race_seq null, kernel by tuner instance" sh -c "[ $rc = 1 ] && diff -u fc.exp fc.out.sec"

# the same, but the tuner raced twice before: the latest race on it is named, not the first
mkdir flatest
printf '%s\n' \
 '{"schema":1,"kind":"race","seq":1,"pid":600,"rank":0,"mode":"detect","ts_ns":10,"severity":"high","serialized":false,"tuner":{"class":"Autotuner","method":"Autotuner.run","kernel":"add_kernel","instance":"0xab0"},"location":null,"entering":{}}' \
 '{"schema":1,"kind":"race","seq":2,"pid":600,"rank":0,"mode":"detect","ts_ns":11,"severity":"high","serialized":false,"tuner":{"class":"Autotuner","method":"Autotuner.run","kernel":"mul_kernel","instance":"0xcd0"},"location":null,"entering":{}}' \
 '{"schema":1,"kind":"race","seq":3,"pid":600,"rank":0,"mode":"detect","ts_ns":12,"severity":"high","serialized":false,"tuner":{"class":"Autotuner","method":"Autotuner.run","kernel":"add_kernel","instance":"0xab0"},"location":null,"entering":{}}' \
 '{"schema":1,"kind":"fatal","seq":4,"pid":600,"rank":0,"mode":"detect","ts_ns":13,"tuner":{"class":null,"method":null,"kernel":null,"instance":"0xAB0"},"location":null,"entering":null,"signal":"SIGBUS","signo":7,"si_code":2,"fault_addr":null,"tid":601,"native":[],"tuners":[{"instance":"0xAB0","occupants":[{"tid":601,"inside_ns":1,"depth":1,"race_seq":null}],"waiters":0}],"race_seq":null,"reports_before":3}' \
 >flatest/tg.rank0.600.jsonl
run_tg flatest report flatest
fsec flatest.out
cat >flatest.exp <<'EOF'
1 process died of a fatal signal:
  pid 600 rank 0: SIGBUS in tid 601, inside kernel 'add_kernel' (this call did not race; that tuner last raced in race report #3 of that process); 3 reports before it; file flatest/tg.rank0.600.jsonl
EOF
check "fatal: race_seq null, the tuner's latest race named (not its first)" sh -c "[ $rc = 1 ] && diff -u flatest.exp flatest.out.sec"

run_tg fm report fb fa fc
check "several fatal records: plural on the header line" has fm.out '^3 races: 2 high, 1 low, 0 serialized; 3 fatal signals; 1 method replacement$'
fsec fm.out
cat >fm.exp <<'EOF'
3 processes died of a fatal signal:
  pid 500 rank 0: SIGBUS (fault address 0x7f0000001000) in tid 501, inside kernel 'add_kernel' (this call did not race; that tuner last raced in race report #1 of that process); 2 reports before it; file fc/tg.rank0.500.jsonl
  pid 4242 rank 3: SIGSEGV (fault address 0x8) in tid 4250, inside kernel 'matmul_kernel' in the call that raced (race report #1 of that process); 2 reports before it; file fa/tunerguard.rank3.4242.jsonl
    tid 4251 was inside kernel 'softmax_kernel' (race report #2)
  pid 77: SIGABRT in tid 78, not inside a tuner; no report before it; file fb/tg.77.jsonl
EOF
check "several fatal records: one line each, by rank (none last)" diff -u fm.exp fm.out.sec

run_tg fj report --json fb fa fc
check "fatal --json: exit 1" [ "$rc" = 1 ]
check "fatal --json: fields" python3 -c "
import json; d = json.load(open('fj.out'))
f = {e['pid']: e for e in d['fatal']}
assert [e['pid'] for e in d['fatal']] == [500, 4242, 77], d['fatal']
assert f[4242] == {'pid': 4242, 'rank': 3, 'signal': 'SIGSEGV', 'tid': 4250, 'fault_addr': '0x8', 'kernel': 'matmul_kernel', 'instance': '0x7f3a1c2b4d10', 'race_seq': 1, 'reports_before': 2, 'file': 'fa/tunerguard.rank3.4242.jsonl'}, f[4242]
assert f[77] == {'pid': 77, 'rank': None, 'signal': 'SIGABRT', 'tid': 78, 'fault_addr': None, 'kernel': None, 'instance': None, 'race_seq': None, 'reports_before': 0, 'file': 'fb/tg.77.jsonl'}, f[77]
assert f[500]['kernel'] == 'add_kernel' and f[500]['race_seq'] is None and f[500]['instance'] == '0xAB0', f[500]
assert d['races'] == 3 and d['method_replaced'] == 1 and d['files'] == 3 and len(d['kernels']) == 3, d
assert list(d)[-2:] == ['fatal', 'summary_lines'], list(d)"

# text fallback (.txt only): a race block, then the fatal block
cat >fd/tunerguard.rank2.600.txt <<'EOF'
==================
WARNING: tunerguard: thread entered a tuner another thread is inside (pid=600, rank=2)
  Call of Autotuner.run on kernel 'mm_kernel' (triton.runtime.autotuner.Autotuner at 0x7f00000a0) by thread 'b' (tid=602):
  Severity: high: the thread inside was benchmarking.
SUMMARY: tunerguard: tuner race on 'mm_kernel' in Autotuner.run model.py:7 in fwd
==================
==================
WARNING: tunerguard: fatal signal SIGSEGV (pid=600)
  Received by thread tid=601, si_code=1, fault address 0x10

  Native stack of tid=601 (innermost first, handler frames included):
    #0 0x7f1bab20a549 (libtunerguard.so+0xa549)

  Tuner state (who is inside which tuner):
    instance 0x7f00000a0: tid=601 inside for 1.2 ms (depth 1)

  Python stacks of all threads (faulthandler format):
  <no Python interpreter running>

SUMMARY: tunerguard: fatal signal SIGSEGV in thread tid=601 (pid=600)
==================
EOF
run_tg fd report fd
check "text fallback: the race block still counts, the fatal block is not a race" sh -c "[ $rc = 1 ] && grep -q '^1 race: 1 high, 0 low, 0 serialized; 1 fatal signal$' fd.out && grep -q \"^kernel 'mm_kernel': 1 race \" fd.out && grep -q '^1 report file, 1 process, ranks 2$' fd.out"
fsec fd.out
cat >fd.exp <<'EOF'
1 process died of a fatal signal:
  pid 600 rank 2: SIGSEGV (fault address 0x10) in tid 601, tuner unknown (text report); 1 report before it; file fd/tunerguard.rank2.600.txt
EOF
check "text fallback: signal, pid, rank (file name), tid, fault address" diff -u fd.exp fd.out.sec
check "text fallback: the fatal SUMMARY line is listed" has fd.out '^   1x SUMMARY: tunerguard: fatal signal SIGSEGV in thread tid=601 (pid=600)$'
run_tg fdj report --json fd
check "text fallback --json" python3 -c "
import json; f = json.load(open('fdj.out'))['fatal']
assert f == [{'pid': 600, 'rank': 2, 'signal': 'SIGSEGV', 'tid': 601, 'fault_addr': '0x10', 'kernel': None, 'instance': None, 'race_seq': None, 'reports_before': 1, 'file': 'fd/tunerguard.rank2.600.txt'}], f"

# a .jsonl without a fatal record (written by a library older than the record) and its .txt with the block
printf '%s\n' '{"schema":1,"kind":"method_replaced","seq":1,"pid":700,"rank":null,"mode":"detect","ts_ns":1,"tuner":{},"location":null,"entering":{},"detail":"x"}' >fe/tg.700.jsonl
printf '%s\n' '==================' 'WARNING: tunerguard: guarded method replaced (pid=700)' 'SUMMARY: tunerguard: guarded method replaced' '==================' \
  '==================' 'WARNING: tunerguard: fatal signal SIGABRT (pid=700)' '  Received by thread tid=700, si_code=-6' '' \
  '  Tuner state (who is inside which tuner):' '    (no thread is inside a tuner)' '' \
  'SUMMARY: tunerguard: fatal signal SIGABRT in thread tid=700 (pid=700)' '==================' >fe/tg.700.txt
run_tg fe report fe
fsec fe.out
cat >fe.exp <<'EOF'
1 process died of a fatal signal:
  pid 700: SIGABRT in tid 700, not inside a tuner; 1 report before it; file fe/tg.700.txt
EOF
check ".jsonl without a fatal record: the .txt's fatal block, listed once" sh -c "[ $rc = 1 ] && diff -u fe.exp fe.out.sec && grep -q '^1 report file, 1 process$' fe.out"

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
