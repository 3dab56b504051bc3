# tunerguard repro: the CPU reproducers (no GPU needed), --gpu skipping, bad arguments.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_tg a repro --runs 1
check "CPU reproducers: exit 0, all as expected" sh -c "[ $rc = 0 ] && grep -q '^all outcomes as expected' a.out"
for s in seeds004 cached_subclass hammer reset_to_zero; do
    check "$s: none failed, detect reported, serialize passed" sh -c "grep -q '^$s  *none  *failed  *failed' a.out && grep -q '^$s  *detect  *reported  *reported' a.out && grep -q '^$s  *serialize  *passed  *passed' a.out"
done
run_tg j repro --json --runs 2 hammer
check "--json for one scenario: exit 0" [ "$rc" = 0 ]
check "--json: 3 cells, 2 runs each, ok" python3 -c "
import json; d = json.load(open('j.out')); r = d['results']
assert d['ok'] is True and len(r) == 3, d
assert all(c['scenario'] == 'hammer' and c['runs'] == 2 and c['as_expected'] == 2 and c['outcome'] == c['expected'] for c in r), r"
run_tg u repro nosuch
check "unknown scenario: exit 2 + usage" sh -c "[ $rc = 2 ] && grep -q \"unknown scenario 'nosuch'\" u.err && grep -q '^usage: tunerguard repro' u.err"
run_tg z repro --runs 0
check "--runs 0: exit 2" [ "$rc" = 2 ]
run_tg v repro --gpu --devices 0 seeds004
check "--devices needs A,B: exit 2 naming the flag" sh -c "[ $rc = 2 ] && grep -q -- '--devices needs two device ordinals' v.err"
run_tg w repro --devices 0,1 seeds004
check "--devices without --gpu: exit 2" sh -c "[ $rc = 2 ] && grep -q -- '--devices needs --gpu' w.err"
run_tg g repro --gpu --runs 1 seeds004
if grep -q '^skipped:' g.out; then
    check "--gpu without GPU/Triton: one skipped line, exit 0" sh -c "[ $rc = 0 ] && [ \$(wc -l <g.out) = 1 ]"
else
    check "--gpu with a GPU: table printed" sh -c "grep -q '^seeds004  *serialize' g.out"
fi
# an outcome that differs makes the exit status non-zero: a library that is not tunerguard
TUNERGUARD_LIB=$FAKE/libcuda.so.1 "$TG" repro --runs 1 seeds004 >d.out 2>d.err
rc=$?
check "outcomes differ (wrong library): exit 1 and marked" sh -c "[ $rc = 1 ] && grep -q 'SOME OUTCOMES DIFFER' d.out && grep -q 'differs' d.out"
finish
