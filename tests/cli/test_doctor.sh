# tunerguard doctor: output shape, the hook probe, option rejection.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
env -u TUNERGUARD_OPTIONS "$TG" doctor >d.out 2>d.err
rc=$?
check "doctor: exit 0 here (no FAIL)" sh -c "[ $rc = 0 ] && ! grep -q '^FAIL' d.out"
check "every line is OK/WARN/FAIL, then the count" sh -c "sed '\$d' d.out | grep -v -q -E '^(OK  |WARN|FAIL)  ' && exit 1; tail -1 d.out | grep -q -E '^[0-9]+ FAIL, [0-9]+ WARN$'"
check "the library is found" grep -q '^OK    library: /' d.out
check "python3 checked" grep -q -E '^(OK|WARN)  +python3 on PATH: ' d.out
check "hooks arm in a child" grep -q 'hooks arm (a preloaded child guarded Probe.method' d.out
check "libcuda line" grep -q -E '^(OK|WARN)  +libcuda.so.1 ' d.out
LD_LIBRARY_PATH=$FAKE env -u TUNERGUARD_OPTIONS "$TG" doctor >f.out 2>&1
check "libcuda (stand-in) loads with its driver version" grep -q '^OK    libcuda.so.1 loads (.*), cuDriverGetVersion: [0-9]* (CUDA ' f.out
check "device count (stand-in: 4) and what it means" grep -q '^OK    4 CUDA devices: threads that drive different devices still share one Autotuner' f.out
TUNERGUARD_OPTIONS=mode=bogus "$TG" doctor >b.out 2>&1
rc=$?
check "bad TUNERGUARD_OPTIONS: FAIL with the library's line, exit 1" sh -c "[ $rc = 1 ] && grep -q \"^FAIL  TUNERGUARD_OPTIONS=mode=bogus is rejected: tunerguard: bad value 'bogus'\" b.out"
TUNERGUARD_OPTIONS=mode=serialize "$TG" doctor >s.out 2>&1
check "good TUNERGUARD_OPTIONS: accepted" grep -q '^OK    TUNERGUARD_OPTIONS=mode=serialize is accepted' s.out
printf 'race:foo\nbogus:x\n' >bad.supp
printf 'race:foo   # a comment\n' >good.supp
TUNERGUARD_OPTIONS="suppressions=$WORK/bad.supp" "$TG" doctor >bs.out 2>&1
rc=$?
check "bad suppressions file: FAIL with the library's line (a Python process stops), exit 1" sh -c \
    "[ $rc = 1 ] && grep -q \"^FAIL  suppressions=$WORK/bad.supp: a Python process stops: tunerguard: suppressions file '$WORK/bad.supp' line 2: unknown type 'bogus'\" bs.out"
mkfifo supp.fifo
TUNERGUARD_OPTIONS="suppressions=$WORK/supp.fifo" timeout 20 "$TG" doctor >fs.out 2>&1
rc=$?
check "a FIFO as suppressions file: FAIL naming it, at once (it hung the Python child before)" sh -c \
    "[ $rc = 1 ] && grep -q \"^FAIL  suppressions=$WORK/supp.fifo: a Python process stops: tunerguard: suppressions file '$WORK/supp.fifo': not a regular file (a FIFO)\" fs.out"
mkdir -p rep
TUNERGUARD_OPTIONS="suppressions=$WORK/good.supp:log_path=$WORK/rep/tg" "$TG" doctor >gs.out 2>&1
rc=$?
check "good suppressions file and log_path: OK lines, exit 0" sh -c \
    "[ $rc = 0 ] && grep -q '^OK    suppressions=$WORK/good.supp reads and parses' gs.out && grep -q '^OK    log_path=$WORK/rep/tg: reports go to $WORK/rep/' gs.out"
TUNERGUARD_OPTIONS="log_path=$WORK/no/such/dir/tg" "$TG" doctor >lp.out 2>&1
check "log_path in a missing directory: WARN (reports would go to stderr)" \
    grep -q "^WARN  log_path=$WORK/no/such/dir/tg: $WORK/no/such/dir is not a directory here; reports would go to stderr" lp.out
TUNERGUARD_OPTIONS="suppressions=no_such.supp" "$TG" doctor >rs.out 2>&1
check "relative suppressions path that does not resolve: WARN with the library's line" \
    grep -q "^WARN  suppressions=no_such.supp: tunerguard: suppressions file 'no_such.supp': cannot read" rs.out
mkdir other && cp "$(dirname "$TG")/libtunerguard.so" other/
LD_PRELOAD=$WORK/other/libtunerguard.so env -u TUNERGUARD_OPTIONS "$TG" doctor >two.out 2>&1
check "another copy already in LD_PRELOAD: says which copy serves (the library, first) and which stays inert" \
    grep -q "^WARN  .*: two copies of libtunerguard.so are preloaded: /.*/libtunerguard.so serves this process (first in LD_PRELOAD's order); this other copy, $WORK/other/libtunerguard.so, stays inert" two.out
check "another copy already in LD_PRELOAD: hooks still arm" grep -q 'hooks arm (a preloaded child' two.out
# A stand-in that answers the doctor's question as a CPython 3.16 would.
printf '#!/bin/sh\necho "cpython 3 16 0 3.16.0"\n' >py316 && chmod +x py316
env -u TUNERGUARD_OPTIONS "$TG" doctor --python "$WORK/py316" >v.out 2>&1
check "CPython 3.16: WARN, not served" \
    grep -q "^WARN  --python: $WORK/py316 is CPython 3.16.0: supported are 3.9 to 3.15; tunerguard stays inert there" v.out
# ... as a free-threaded 3.15t would (the GIL off), and as a free-threaded 3.14t.
printf '#!/bin/sh\necho "cpython 3 15 1 3.15.0 0"\n' >py315t && chmod +x py315t
env -u TUNERGUARD_OPTIONS "$TG" doctor --python "$WORK/py315t" >ft.out 2>&1
check "free-threaded 3.15t: WARN, not served" \
    grep -q "^WARN  --python: $WORK/py315t is a free-threaded build (3.15.0t): supported free-threaded are 3.13t and 3.14t; tunerguard stays inert there" ft.out
printf '#!/bin/sh\ncase "$*" in *sysconfig*) echo "cpython 3 14 1 3.14.0 0";; *) exit 1;; esac\n' >py314t && chmod +x py314t
env -u TUNERGUARD_OPTIONS "$TG" doctor --python "$WORK/py314t" >ft4.out 2>&1
check "free-threaded 3.14t: served, the GIL off" \
    grep -q "^OK    --python: $WORK/py314t is CPython 3.14.0t (free-threaded), supported; the GIL is off here" ft4.out
PYTHON=/no/such/python env -u TUNERGUARD_OPTIONS "$TG" doctor >p.out 2>&1
check "missing \$PYTHON: WARN" grep -q '^WARN  \$PYTHON: /no/such/python not found' p.out
run_tg x doctor --bogus
check "bad flag: exit 2 + usage" sh -c "[ $rc = 2 ] && grep -q '^usage: tunerguard doctor' x.err"
finish
