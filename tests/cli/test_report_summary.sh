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

finish
