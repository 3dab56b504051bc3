# tunerguard run: flags, environment, exit status, report listing.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_tg b1 run --bogus -- true
check "unknown flag: exit 2 + usage" sh -c "[ $rc = 2 ] && grep -q '^usage: tunerguard run' b1.err"
run_tg b2 run --detect
check "no program: exit 2 + usage" sh -c "[ $rc = 2 ] && grep -q 'no program given' b2.err"
run_tg b3 run --option novalue -- true
check "--option without '=': exit 2" [ "$rc" = 2 ]
run_tg b3m run --option mode=serialize --off -- true
check "--option mode= and a mode flag that differ: exit 2, both named" \
    sh -c "[ $rc = 2 ] && grep -q -- '--off conflicts with mode serialize given before' b3m.err"
run_tg b3d run --report-dir -- true
check "--report-dir followed by --: no folder named '--', exit 2" \
    sh -c "[ $rc = 2 ] && grep -q -- '--report-dir needs a directory' b3d.err && [ ! -e -- ]"
run_tg b4 run --report-dir
check "--report-dir without a value: exit 2" [ "$rc" = 2 ]
run_tg b5 run --detect --serialize -- true
check "conflicting modes: exit 2" [ "$rc" = 2 ]

run_tg s1 run -- sh -c 'exit 7'
check "exit status passed through (7)" [ "$rc" = 7 ]
run_tg s2 run -- true
check "exit status passed through (0)" [ "$rc" = 0 ]
run_tg s3 run -- sh -c 'kill -KILL $$'
check "killed by SIGKILL: 137" [ "$rc" = 137 ]
run_tg s4 run -- sh -c 'kill -TERM $$'
check "killed by SIGTERM: 143" [ "$rc" = 143 ]
run_tg s5 run -- /no/such/program
check "program not found: 127" [ "$rc" = 127 ]

LIB=$(dirname "$TG")/libtunerguard.so
[ -f "$LIB" ] || LIB=$(readlink -f "$(dirname "$TG")/../lib/libtunerguard.so")
OTHER=$FAKE/libcuda.so.1
LD_PRELOAD=$OTHER TUNERGUARD_OPTIONS=verbosity=1 "$TG" run --serialize --option exitcode=-1 -- sh -c 'printf "%s\n%s\n" "$LD_PRELOAD" "$TUNERGUARD_OPTIONS"' >env.out 2>env.err
rc=$?
check "env: exit 0" [ "$rc" = 0 ]
check "LD_PRELOAD is lib then the existing preload" sh -c "[ \"\$(sed -n 1p env.out)\" = '$(readlink -f "$LIB"):$OTHER' ]"
check "TUNERGUARD_OPTIONS keeps the existing options, ours after, log_path made absolute last" sh -c "[ \"\$(sed -n 2p env.out)\" = 'verbosity=1:mode=serialize:exitcode=-1:log_path=$WORK/tunerguard' ]"
"$TG" run --report-dir "$WORK/rd" -- sh -c 'printf "%s\n" "$TUNERGUARD_OPTIONS"' >rd.out 2>rd.err
check "--report-dir sets log_path and creates the dir" sh -c "grep -q 'log_path=$WORK/rd/tunerguard' rd.out && [ -d '$WORK/rd' ]"
check "no race: 'no report files'" has rd.err "tunerguard: no report files"

run_tg st run --stress -- true
if [ "$rc" = 2 ]; then
    check "--stress on a library without it: its one-line rejection" has st.err "unknown option 'stress'"
else
    check "--stress accepted by the library" [ "$rc" = 0 ]
fi
run_tg bo run --option mode=bogus -- true
check "a bad option value: the library's exit 2 and its line" sh -c "[ $rc = 2 ] && grep -q \"bad value 'bogus' for option 'mode'\" bo.err"

# a Python program that races (CPU reproducer with the stand-in libcuda)
LD_LIBRARY_PATH=$FAKE "$TG" run --report-dir "$WORK/race" -- python3 "$SCEN/seeds004.py" >race.out 2>race.err
rc=$?
check "racing program: its own status (0 or 1) is passed through" sh -c "[ $rc = 0 ] || [ $rc = 1 ]"
check "racing program: report files listed" sh -c "grep -q '^tunerguard: report: $WORK/race/tunerguard\.[0-9]*\.jsonl$' race.err && grep -q '^tunerguard: report: $WORK/race/tunerguard\.[0-9]*\.txt$' race.err"
check "racing program: listed files exist and name the kernel" sh -c "for f in \$(sed -n 's/^tunerguard: report: //p' race.err); do grep -q test_seed004 \$f || exit 1; done"
check "racing program: points at tunerguard report" has race.err "tunerguard: summarize with: tunerguard report $WORK/race"
# a second run lists only its own files
LD_LIBRARY_PATH=$FAKE "$TG" run --serialize --report-dir "$WORK/race" -- python3 "$SCEN/seeds004.py" --expect-serialized >race2.out 2>race2.err
rc=$?
check "serialize: the racing program passes" [ "$rc" = 0 ]
check "second run lists only its own reports" sh -c "[ \$(grep -c '^tunerguard: report:' race2.err) = 2 ] && ! grep -q \"\$(sed -n 's/^tunerguard: report: //p' race.err | head -1)\" race2.err"

# a folder name with both quotes and a backslash: the printed command is one
# sh word, and running it with bash summarizes that folder
LD_LIBRARY_PATH=$FAKE "$TG" run --report-dir "$WORK/q'x\"y\\z" -- python3 "$SCEN/seeds004.py" >sq.out 2>sq.err
sq_cmd=$(sed -n 's/^tunerguard: summarize with: //p' sq.err)
PATH="$(dirname "$TG"):$PATH" bash -c "$sq_cmd" >sq_report.out 2>sq_report.err
rc=$?
check "quotes and a backslash in --report-dir: the printed command runs in bash and reads that folder" \
    sh -c "{ [ $rc = 0 ] || [ $rc = 1 ]; } && [ ! -s sq_report.err ] && grep -q '^1 report file, 1 process' sq_report.out && grep -q test_seed004 sq_report.out"

# --report-dir with a space or ':' in it: the library gets log_path quoted, the
# program runs, its reports land there and the listing names the real directory.
run_tg q1 run --report-dir "my reports" -- python3 -c 'print("PROGRAM RAN")'
check "--report-dir with a space: the program runs (exit 0)" sh -c "[ $rc = 0 ] && grep -qx 'PROGRAM RAN' q1.out"
check "--report-dir with a space: the dir is created" [ -d "$WORK/my reports" ]
check "--report-dir with a space: 'no report files' names the real prefix, absolute" grep -qxF "tunerguard: no report files ($WORK/my reports/tunerguard.<pid>.*)" q1.err
"$TG" run --report-dir "$WORK/a:b" -- sh -c 'printf "%s\n" "$TUNERGUARD_OPTIONS"' >q2.out 2>q2.err
check "--report-dir with ':': log_path is quoted with '" grep -qxF "log_path='$WORK/a:b/tunerguard'" q2.out
"$TG" run --report-dir "$WORK/it's:here" -- sh -c 'printf "%s\n" "$TUNERGUARD_OPTIONS"' >q3.out 2>q3.err
check "--report-dir holding ' and ':': log_path is quoted with \"" grep -qxF "log_path=\"$WORK/it's:here/tunerguard\"" q3.out
run_tg q4 run --report-dir "$WORK/it's \"both\"" -- python3 -c 'print("PROGRAM RAN")'
check "--report-dir holding both quotes and a space: exit 2, one line, nothing run" \
    sh -c "[ $rc = 2 ] && [ ! -s q4.out ] && [ \$(wc -l <q4.err) = 1 ] && grep -q \"^tunerguard: run: --report-dir .* holds both ' and \\\" \" q4.err"
check "--report-dir holding both quotes: the dir is not created" [ ! -e "$WORK/it's \"both\"" ]
for rdir in "$WORK/race dir" "$WORK/race:dir"; do
    LD_LIBRARY_PATH=$FAKE "$TG" run --report-dir "$rdir" -- python3 "$SCEN/seeds004.py" >qr.out 2>qr.err
    rc=$?
    check "racing program, --report-dir '$rdir': the program ran (0 or 1, no option error)" \
        sh -c "{ [ $rc = 0 ] || [ $rc = 1 ]; } && ! grep -q 'malformed option' qr.err"
    check "racing program, --report-dir '$rdir': .txt and .jsonl listed there" \
        sh -c "grep -q '^tunerguard: report: $rdir/tunerguard\.[0-9]*\.jsonl\$' qr.err && grep -q '^tunerguard: report: $rdir/tunerguard\.[0-9]*\.txt\$' qr.err"
    check "racing program, --report-dir '$rdir': the listed files exist and name the kernel" \
        sh -c "sed -n 's/^tunerguard: report: //p' qr.err | { n=0; while IFS= read -r f; do grep -q test_seed004 \"\$f\" || exit 1; n=\$((n+1)); done; [ \$n = 2 ]; }"
    check "racing program, --report-dir '$rdir': tunerguard report pointed at the dir, shell-quoted" \
        grep -qxF "tunerguard: summarize with: tunerguard report '$rdir'" qr.err
done
# Children that change directory: run passes an absolute log_path, so the reports
# land where run looks (the --report-dir, else where run was started) and are listed.
mkdir sub
LD_LIBRARY_PATH=$FAKE "$TG" run --report-dir rd -- sh -c "cd sub && python3 '$SCEN/seeds004.py'" >cd1.out 2>cd1.err
check "relative --report-dir, child in another folder: log_path given absolute" \
    sh -c "[ -n \"\$(ls rd/tunerguard.*.jsonl 2>/dev/null)\" ] && [ -z \"\$(ls sub 2>/dev/null)\" ] && ! grep -q 'cannot open\\|to stderr' cd1.err"
check "relative --report-dir, child in another folder: the reports listed by absolute path" \
    sh -c "grep -q '^tunerguard: report: $WORK/rd/tunerguard\.[0-9]*\.jsonl\$' cd1.err && grep -qxF 'tunerguard: summarize with: tunerguard report $WORK/rd' cd1.err && ! grep -q 'no report files' cd1.err"
mkdir cd2 cd2/sub
(cd cd2 && LD_LIBRARY_PATH=$FAKE "$TG" run -- sh -c "cd sub && python3 '$SCEN/seeds004.py'") >cd2.out 2>cd2.err
check "no --report-dir, child in another folder: reports where run was started, listed" \
    sh -c "ls cd2/tunerguard.*.txt >/dev/null 2>&1 && [ -z \"\$(ls cd2/sub)\" ] && grep -q '^tunerguard: report: $WORK/cd2/tunerguard\.[0-9]*\.txt\$' cd2.err && ! grep -q 'no report files' cd2.err"
mkdir cd3 cd3/sub cd3/out
(cd cd3 && TUNERGUARD_OPTIONS=log_path=out/tg LD_LIBRARY_PATH=$FAKE "$TG" run -- sh -c "cd sub && python3 '$SCEN/seeds004.py'") >cd3.out 2>cd3.err
check "a relative log_path already set: made absolute against where run was started" \
    sh -c "ls cd3/out/tg.*.jsonl >/dev/null 2>&1 && grep -q '^tunerguard: report: $WORK/cd3/out/tg\.[0-9]*\.jsonl\$' cd3.err"
"$TG" run --option log_path=stderr -- sh -c 'printf "%s\n" "$TUNERGUARD_OPTIONS"' >ls.out 2>ls.err
check "log_path=stderr stays stderr" sh -c "[ \"\$(cat ls.out)\" = 'log_path=stderr' ] && grep -q 'log_path=stderr: reports, if any, are above' ls.err"
"$TG" run --option log_path=/abs/tg -- sh -c 'printf "%s\n" "$TUNERGUARD_OPTIONS"' >la.out 2>la.err
check "an absolute log_path is passed as given" [ "$(cat la.out)" = 'log_path=/abs/tg' ]
"$TG" run --report-dir rd2 --option log_path=other/tg -- sh -c 'printf "%s\n" "$TUNERGUARD_OPTIONS"' >lo.out 2>lo.err
check "--option log_path after --report-dir wins, made absolute" \
    grep -qxF "log_path=$WORK/rd2/tunerguard:log_path=other/tg:log_path=$WORK/other/tg" lo.out
: >afile
run_tg rf run --report-dir afile -- true
check "--report-dir naming a file: exit 2, one line, nothing run" \
    sh -c "[ $rc = 2 ] && [ \$(wc -l <rf.err) = 1 ] && grep -q '^tunerguard: run: --report-dir afile exists and is not a directory' rf.err"
# a --report-dir longer than a path may be: refused, never a shorter folder made instead
long=$WORK/$(python3 -c 'print("/".join(["d" * 200] * 25))')
"$TG" run --report-dir "$long" true >long.out 2>long.err; rc=$?
check "--report-dir too long: exit 2, 'File name too long', no folder made" \
    sh -c "[ $rc = 2 ] && grep -q 'File name too long' long.err && [ ! -e '$WORK/$(printf 'd%.0s' $(seq 200))' ]"
finish
