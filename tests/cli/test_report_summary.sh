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
mkdir exc
rec 72 1 exception false >exc/tg.72.jsonl
run_tg p3 report exc
check "an exception linked to a race: exit 1" [ "$rc" = 1 ]

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

finish
