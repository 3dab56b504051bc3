# tunerguard report: the exit status follows exitcode='s rule (tg_report_fails);
# copies of one process's file are counted once; the summary says no '?',
# no empty fields, and times as local date and time.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
# rec PID SEQ KIND SERIALIZED [KERNEL]: one JSON Lines record
rec() {
    printf '{"schema":1,"kind":"%s","seq":%s,"pid":%s,"rank":null,"mode":"serialize","ts_ns":%s,"severity":"high","serialized":%s,"tuner":{"class":"Autotuner","method":"Autotuner.run","kernel":"%s","instance":"0x10"},"location":null,"entering":{}}\n' \
        "$3" "$2" "$1" "$((1000 + $2))" "$4" "${5:-k}"
}

mkdir prev
{ rec 70 1 race true; rec 70 2 interference false; rec 70 3 repeats false; rec 70 4 method_replaced false; } >prev/tg.70.jsonl
run_tg p report prev
check "only a prevented race and informational kinds: exit 0" sh -c "[ $rc = 0 ] && grep -q '^1 race: 1 high, 0 low, 1 serialized' p.out"
rec 71 1 race false >prev/tg.71.jsonl
run_tg p2 report prev
check "a race that happened: exit 1" [ "$rc" = 1 ]
mkdir low
rec 73 1 race false | sed 's/"severity":"high"/"severity":"low"/' >low/tg.73.jsonl
run_tg pl0 report low
check "only a low-severity overlap (verbosity=1): exit 0" sh -c "[ $rc = 0 ] && grep -q '^1 race: 0 high, 1 low' pl0.out"
mkdir exc
rec 72 1 exception false >exc/tg.72.jsonl
run_tg p3 report exc
check "an exception linked to a race: exit 1" [ "$rc" = 1 ]

# serialize's own reports: counted from the fields of schema 2 and from the
# sentence of schema 1 (a file an older library wrote).
mkdir waits
{ printf '%s\n' '{"schema":2,"kind":"deadlock","seq":1,"pid":90,"rank":null,"mode":"serialize","ts_ns":1,"tuner":{},"location":null,"entering":{},"cycle":[{"kernel":"a","holder_tid":91},{"kernel":"b","holder_tid":90}],"policy":"proceed","inside":{}}'
  printf '%s\n' '{"schema":2,"kind":"wait_timeout","seq":2,"pid":90,"rank":null,"mode":"serialize","ts_ns":2,"tuner":{},"location":null,"entering":{},"waited_ns":1000000000,"stalled_ns":null,"proceeds":false,"wait_timeout_s":1,"on_wait_timeout":"proceed","inside":{}}'
  printf '%s\n' '{"schema":2,"kind":"wait_timeout","seq":3,"pid":90,"rank":null,"mode":"serialize","ts_ns":3,"tuner":{},"location":null,"entering":{},"waited_ns":2000000000,"stalled_ns":900000000,"proceeds":true,"wait_timeout_s":1,"on_wait_timeout":"proceed","inside":{}}'
} >waits/tg.90.jsonl
printf '%s\n' '{"schema":1,"kind":"wait_timeout","seq":1,"pid":92,"rank":null,"mode":"serialize","ts_ns":1,"tuner":{},"location":null,"entering":{},"detail":"this thread proceeds unserialized after 1.0 s waiting for '"'k'"'","inside":{}}' >waits/tg.92.jsonl
run_tg pw report waits
check "deadlocks and wait timeouts counted, the waits that proceeded read from both schemas" \
    has pw.out "; 1 cycle of serialized waits; 3 serialized waits past wait_timeout (2 proceeded unserialized)"
run_tg pwj report --json waits
check "--json: deadlocks, wait_timeouts, waits_proceeded" python3 -c "
import json; d = json.load(open('pwj.out'))
assert (d['deadlocks'], d['wait_timeouts'], d['waits_proceeded']) == (1, 3, 2), d"

# A tuner without a kernel name, no ranks, a wall-clock time: named by its
# method, no '?', no 'ranks: -', the first race as a local date and time.
mkdir plain
printf '%s\n' '{"schema":1,"kind":"race","seq":1,"pid":80,"rank":null,"mode":"detect","ts_ns":5,"wall_ns":1796425925000000000,"severity":"high","serialized":false,"tuner":{"class":"tgfix.tuners.Tuner","method":"Tuner.run","kernel":"?","instance":"0x10"},"location":null,"entering":{}}' >plain/tg.80.jsonl
TZ=UTC run_tg pl report plain
check "no kernel name: the tuner by its method" has pl.out "^tuner 'Tuner.run' (no kernel name): 1 race "
check "no '?' anywhere" sh -c "! grep -q '?' pl.out"
check "no rank: no ranks field" sh -c "! grep -q 'ranks' pl.out"
check "first: the local date and time" has pl.out "^  first: 2026-12-04 23:12:05, pid 80 in plain/tg.80.jsonl"
TZ=UTC run_tg plj report --json plain
check "--json: kernel null, tuner named, time" python3 -c "
import json; k = json.load(open('plj.out'))['kernels'][0]
assert k['kernel'] is None and k['tuner'] == 'Tuner.run' and k['first']['time'] == '2026-12-04 23:12:05', k"

# 50 copies of one process's files (and its .txt) are one process's records,
# counted once; another process that had the same pid (other times) is not
# a copy.
mkdir copies
{ rec 90 1 race false; rec 90 2 race false hot; } >copies/tg.90.jsonl
printf '%s\n' '==================' 'SUMMARY: tunerguard: tuner race on x' '==================' >copies/tg.90.txt
i=0
while [ $i -lt 50 ]; do
    mkdir copies/c$i && cp copies/tg.90.jsonl copies/tg.90.txt copies/c$i/
    i=$((i + 1))
done
run_tg cp report copies
check "copies: 1 process, 2 races" sh -c "grep -q '^51 report files, 1 process$' cp.out && grep -q '^2 races: ' cp.out"
check "copies: said on the header line" has cp.out "; 100 records in copied files counted once"
check "copies: the SUMMARY line counted once" has cp.out "^   1x SUMMARY: tunerguard: tuner race on x"
printf '%s\n' '{"schema":1,"kind":"race","seq":1,"pid":90,"rank":null,"mode":"detect","ts_ns":777777,"severity":"high","serialized":false,"tuner":{"kernel":"k"},"location":null,"entering":{}}' >copies/tg.90.1.jsonl
run_tg cp2 report copies
check "the same pid at other times: not a copy" sh -c "grep -q '^3 races: ' cp2.out"
run_tg cpj report --json copies
check "--json: copied_records" python3 -c "
import json; d = json.load(open('cpj.out')); assert d['races'] == 3 and d['copied_records'] == 100, d"

finish
