# tunerguard report on folders anyone may have written into: unreadable entries,
# FIFOs, links to / and in loops, hard links, any depth, many processes, a newer
# schema, cut files, names with control bytes.  Every run is under `timeout`: a
# hang is a failure, not a stuck test.  Exit statuses: 0 nothing found, 1 found,
# 2 usage / nothing there, +4 when some input could not be read in full.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
T="timeout 60"
# one complete race record of process PID (rank RANK or null)
race() { printf '{"schema":%s,"kind":"race","seq":1,"pid":%s,"rank":%s,"mode":"detect","ts_ns":%s,"severity":"high","serialized":false,"tuner":{"class":"Autotuner","method":"Autotuner.run","kernel":"k%s","instance":"0x10"},"location":null,"entering":{}}\n' "${4:-1}" "$1" "$2" "$1" "$3"; }
replaced() { printf '{"schema":1,"kind":"method_replaced","seq":1,"pid":%s,"rank":null,"mode":"detect","ts_ns":1,"tuner":{},"location":null,"entering":{},"detail":"x"}\n' "$1"; }
# clean_exit FILE: no allocator abort or crash message in FILE
clean_exit() { ! grep -q 'free()\|double free\|Aborted\|core dumped\|Segmentation' "$1"; }
rtg() { p=$1; shift; $T "$TG" "$@" >"$p.out" 2>"$p.err"; rc=$?; }

# ---- a symbolic link to / next to a report: not followed, no crash ------------
mkdir h1 && race 11 null a >h1/tg.11.jsonl && ln -s / h1/root
rtg h1 report h1
check "link to /: not followed, the report read, exit 1 (no crash)" \
    sh -c "[ $rc = 1 ] && grep -q '^1 report file, 1 process$' h1.out && ! grep -q . h1.err"
check "link to /: no abort message" clean_exit h1.err

# ---- a FIFO named like a report: named, never opened for a blocking read ------
mkdir h2 && race 12 null a >h2/tg.12.jsonl && mkfifo h2/tg.13.jsonl
rtg h2 report h2
check "FIFO in a folder: no hang, named as a FIFO, exit 1+4" \
    sh -c "[ $rc = 5 ] && grep -q '^tunerguard: h2/tg.13.jsonl: a FIFO, not a regular file; skipped$' h2.err && [ \$(wc -l <h2.err) = 1 ]"
check "FIFO in a folder: the other file still read" grep -q '^1 race: 1 high' h2.out
rtg h2b report h2/tg.13.jsonl
check "FIFO given as a PATH: no hang, named, nothing read: exit 4" \
    sh -c "[ $rc = 4 ] && grep -q 'h2/tg.13.jsonl: a FIFO' h2b.err && grep -q 'no report file could be read' h2b.err"
ln -s /dev/zero h2/tg.14.txt
rtg h2c report h2
check "a report-named link to /dev/zero: not followed, named" \
    sh -c "[ $rc = 5 ] && grep -q '^tunerguard: h2/tg.14.txt: a symbolic link (not followed); skipped$' h2c.err"

# ---- symbolic-link loops and hard links: each file read once ------------------
mkdir -p h3/a && race 15 null a >h3/a/tg.15.jsonl && ln -s .. h3/a/up && ln -s ../a h3/a/self && ln -s a h3/again
ln h3/a/tg.15.jsonl h3/tg.99.jsonl
rtg h3 report h3 h3 h3/a h3/a/tg.15.jsonl
check "link loops, a hard link, the same folder and file given again: one file, one race" \
    sh -c "[ $rc = 1 ] && grep -q '^1 report file, 1 process$' h3.out && grep -q '^1 race:' h3.out"

# ---- a folder seen twice through a bind mount (in a private mount namespace):
# walked once, so its FIFO is named once and its report read once
mkdir -p h3b/c && race 17 null a >h3b/tg.17.jsonl && mkfifo h3b/tg.18.jsonl
if timeout 20 unshare -rm sh -c 'mount --bind h3b h3b/c' 2>/dev/null; then
    timeout 60 unshare -rm sh -c 'mount --bind h3b h3b/c && [ -p h3b/c/tg.18.jsonl ] && exec "$0" report h3b' "$TG" >h3b.out 2>h3b.err
    rc=$?
    check "a folder mounted inside itself: walked once (one FIFO line, one file)" \
        sh -c "[ $rc = 5 ] && [ \$(grep -c 'a FIFO' h3b.err) = 1 ] && grep -q '^1 report file, 1 process$' h3b.out"
else
    echo "skip - no private mount namespace here (unshare -rm)"
fi

# ---- any depth (past PATH_MAX) ---------------------------------------------------
python3 - <<'PY'
import os
fd = os.open(".", os.O_RDONLY)
os.mkdir("deep", dir_fd=fd)
fd = os.open("deep", os.O_RDONLY, dir_fd=fd)
for i in range(300):  # 300 levels of 16 characters: a path of about 5000 bytes
    name = "level%011d" % i
    os.mkdir(name, dir_fd=fd)
    fd = os.open(name, os.O_RDONLY, dir_fd=fd)
    if i in (9, 299):
        w = os.open("tg.%d.jsonl" % (700 + i), os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(w, ('{"schema":1,"kind":"race","seq":1,"pid":%d,"rank":null,"mode":"detect","ts_ns":5,"severity":"low","serialized":false,"tuner":{"kernel":"deep"},"location":null,"entering":{}}\n' % (700 + i)).encode())
        os.close(w)
PY
race 16 null a >deep/tg.16.jsonl
rtg h4 report deep
check "300 folders deep (path > PATH_MAX): every report found, the shallow one after the deep ones" \
    sh -c "[ $rc = 1 ] && grep -q '^3 report files, 3 processes$' h4.out && grep -q \"^kernel 'deep': 2 races\" h4.out && ! grep -q . h4.err"

# ---- more than 1024 processes ----------------------------------------------------
mkdir h5
i=0; while [ $i -lt 1500 ]; do replaced $((5000 + i)); i=$((i + 1)); done >h5/tg.5000.jsonl
rtg h5 report --json h5
check "1500 processes in one file: all counted" python3 -c "
import json; d = json.load(open('h5.out')); assert len(d['processes']) == 1500 and d['method_replaced'] == 1500, len(d['processes'])"
mkdir h5b
i=0; while [ $i -lt 1100 ]; do race $((20000 + i)) $i a >h5b/tg.rank$i.$((20000 + i)).jsonl; i=$((i + 1)); done
rtg h5b report --json h5b
check "1100 files, ranks and racing processes: all counted" python3 -c "
import json; d = json.load(open('h5b.out'))
assert d['files'] == 1100 and len(d['processes']) == 1100 and len(d['ranks']) == 1100, (d['files'], len(d['ranks']))
k = d['kernels'][0]; assert k['races'] == 1100 and len(k['pids']) == 1100 and len(k['ranks']) == 1100, k['races']"
rtg h5t report h5b
check "1100 racing processes in text: one short line, their count and ranges" \
    sh -c "grep -q '^  processes: 1100 (20000-21099)   ranks: 1100 (0-1099)\$' h5t.out && [ \$(wc -L <h5t.out) -lt 200 ]"
mkdir h5c
i=0; while [ $i -lt 20 ]; do race $((30000 + 7 * i)) null a >h5c/tg.$((30000 + 7 * i)).jsonl; i=$((i + 1)); done
rtg h5c report h5c
check "20 processes apart: the count, the first three and the last two" \
    sh -c "grep -q '^  processes: 20 (30000 30007 30014 ... 30126 30133)\$' h5c.out"

# ---- a newer schema: refused by name, nothing of it counted ---------------------
mkdir h6 && race 17 null a 99 >h6/tg.17.jsonl && race 18 null b >h6/tg.18.jsonl
rtg h6 report h6
check "schema 99: the file refused by name, the schema-1 file read, exit 1+4" \
    sh -c "[ $rc = 5 ] && grep -q '^tunerguard: h6/tg.17.jsonl: written with report schema 99; this tunerguard reads schema 2 and older: file skipped' h6.err && grep -q '^1 race: ' h6.out && ! grep -q \"kernel 'ka'\" h6.out"

# ---- cut and damaged .jsonl, cut .txt --------------------------------------------
mkdir h7
{ race 19 null a; printf 'not json\n'; race 19 null a | head -c 60; } >h7/tg.19.jsonl
rtg h7 report h7
check "a cut last line and a bad line: one line naming the file and both, exit 1+4" \
    sh -c "[ $rc = 5 ] && [ \$(wc -l <h7.err) = 1 ] && grep -q '^tunerguard: h7/tg.19.jsonl: truncated (its last line is cut short) and 1 other line is not a record (first: line 2); 1 record read$' h7.err && grep -q '2 unreadable lines skipped' h7.out"
mkdir h8 && printf '==================\nWARNING: tunerguard: thread entered a tuner another thread is inside (pid=30)\n  Call of Autotuner.run on ker' >h8/tg.30.txt
rtg h8 report h8
check "a .txt cut inside its race block (fallback): named as truncated, what was read of the race counted, exit 1+4" \
    sh -c "[ $rc = 5 ] && grep -q '^tunerguard: h8/tg.30.txt: truncated: its last report block is cut short' h8.err && grep -q '^1 race: ' h8.out"

# ---- unreadable folder and file (as an unprivileged user: root reads anything) ----
# That user must reach the command and the folders: the build may sit under a
# folder only we can enter (a clone in a 0700 temp folder), and so may
# $TMPDIR.  So a scratch folder of its own under /tmp, 0755, holds a copy of
# the command and the folders it reads.
UDIR=$(mktemp -d /tmp/tg-cli-user.XXXXXX) && chmod 755 "$UDIR" && cp "$TG" "$UDIR/tunerguard" && chmod 755 "$UDIR/tunerguard"
trap 'rm -rf "$WORK" "$UDIR"' EXIT
if [ "$(id -u)" != 0 ]; then
    as_user() { "$@"; }
elif command -v setpriv >/dev/null 2>&1 &&
     setpriv --reuid=65534 --regid=65534 --clear-groups -- "$UDIR/tunerguard" --help >/dev/null 2>&1; then
    as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
else
    as_user() { return 77; }
fi
(
cd "$UDIR" || exit 1
mkdir -p h9/locked h9/ok && race 31 null a >h9/ok/tg.31.jsonl && race 32 null b >h9/locked/tg.32.jsonl
race 33 null c >h9/ok/tg.33.jsonl
printf '==================\nWARNING: tunerguard: thread entered a tuner another thread is inside (pid=33)\n  Call of Autotuner.run on kernel '"'"'kc'"'"' (x) by thread '"'"'b'"'"' (tid=34):\n  Severity: high: x.\nSUMMARY: tunerguard: tuner race on '"'"'kc'"'"' in Autotuner.run m.py:1 in f\n==================\n' >h9/ok/tg.33.txt
chmod -R a+rX h9 && chmod 000 h9/locked h9/ok/tg.33.jsonl
)
(cd "$UDIR" && as_user $T "$UDIR/tunerguard" report h9) >h9.out 2>h9.err
rc=$?
if [ $rc = 77 ]; then
    echo "skip - cannot run as an unprivileged user here (root reads unreadable files)"
else
    check "unreadable folder: named, no crash, the rest read, exit 1+4" \
        sh -c "[ $rc = 5 ] && grep -q '^tunerguard: h9/locked: cannot open the folder: Permission denied; skipped$' h9.err"
    check "unreadable folder: no abort message" clean_exit h9.err
    check "unreadable .jsonl: named; its .txt read as the fallback" \
        sh -c "grep -q '^tunerguard: h9/ok/tg.33.jsonl: cannot open: Permission denied; skipped$' h9.err && grep -q \"^kernel 'kc': 1 race\" h9.out && grep -q '^2 report files, 2 processes' h9.out"
fi
chmod 755 "$UDIR/h9/locked"

# ---- names: control bytes escaped, any suffix after the pid, a hidden prefix ----
mkdir h10
printf 'garbage\n' >"h10/tg$(printf '\033')[2J.40.jsonl"
race 41 null a >h10/tunerguard.41.k3x9.jsonl && race 42 2 b >h10/tg.rank2.42.7f.jsonl && race 43 null c >h10/.43.jsonl
rtg h10 report h10
check "a control byte in a name is escaped on stderr (no raw ESC)" \
    sh -c "! grep -q \"\$(printf '\\033')\" h10.err && grep -qF 'h10/tg\\x1b[2J.40.jsonl: 1 line is not a record' h10.err"
check "PREFIX.<pid>.<token>, PREFIX.rank<R>.<pid>.<token> and a hidden .<pid>.jsonl are reports" \
    sh -c "[ $rc = 5 ] && grep -q '^4 report files, 3 processes, ranks 2$' h10.out && grep -q '^3 races:' h10.out"

# ---- --trace OUT: never one of the inputs; errors with the prefix ------------------
mkdir h11 && printf '[{"name":"a","ph":"i","ts":1,"pid":1,"tid":1,"s":"t"}]' >h11/tg.1.trace.json && cp h11/tg.1.trace.json h11.keep
rtg h11 report --trace h11/tg.1.trace.json h11
check "--trace OUT that is one of the inputs: refused, exit 2, left as it was" \
    sh -c "[ $rc = 2 ] && grep -q '^tunerguard: --trace h11/tg.1.trace.json is one of the files read; not overwritten' h11.err && cmp -s h11/tg.1.trace.json h11.keep"
rtg h11b report --trace /no/such/dir/m.json h11
check "--trace into a missing folder: one 'tunerguard:' line, exit 2" \
    sh -c "[ $rc = 2 ] && grep -q '^tunerguard: cannot write /no/such/dir/m.json: No such file or directory$' h11b.err"
rtg h11c report --trace h11 h11/tg.1.trace.json
check "--trace OUT that is a folder: said as a folder, exit 2" \
    sh -c "[ $rc = 2 ] && grep -q '^tunerguard: --trace h11 is a folder; name the file to write$' h11c.err"

# ---- inputs not read are counted in the exit status ------------------------------
mkdir h12 && replaced 51 >h12/tg.51.jsonl
rtg h12 report h12/tg.51.jsonl h12/gone.52.jsonl
check "a PATH that does not exist: named, and the exit status says not everything was read (4)" \
    sh -c "[ $rc = 4 ] && grep -q '^tunerguard: h12/gone.52.jsonl: No such file or directory; skipped$' h12.err"
printf 'x\n' >h12/notes.md
rtg h12b report h12/tg.51.jsonl h12/notes.md
check "a PATH that is no report: named, exit 4" \
    sh -c "[ $rc = 4 ] && grep -q 'h12/notes.md: not a report' h12b.err"

# ---- a huge (sparse) file named like a report: skipped at once, the rest read ------
mkdir h13 && truncate -s 2G h13/tg.61.txt && replaced 62 >h13/tg.62.jsonl
rtg h13 report h13
check "a 2 GB sparse report-named file: skipped with its size, not read, exit 4" \
    sh -c "[ $rc = 4 ] && grep -q '^tunerguard: h13/tg.61.txt: 2147483648 bytes: too large for a report file' h13.err && grep -q '^1 report file, 1 process$' h13.out"

# ---- records this version does not know, or that lack what every record has ---------
mkdir h15 && { race 70 null a; printf '{"schema":1,"kind":"newkind","seq":2,"pid":70,"rank":null}\n'; } >h15/tg.70.jsonl
printf '{"schema":1,"kind":"newkind","seq":1,"pid":71,"rank":null}\n' >h15b.jsonl
mkdir h15b && mv h15b.jsonl h15b/tg.71.jsonl
rtg h15 report h15b
check "only a record of an unknown kind: skipped with one line naming it, exit 0" \
    sh -c "[ $rc = 0 ] && grep -q \"^tunerguard: h15b/tg.71.jsonl: records of kind 'newkind', unknown to this tunerguard, skipped\" h15.err && [ \$(wc -l <h15.err) = 1 ]"
printf '{"schema":1,"kind":"race","seq":1,"rank":null,"severity":"high","tuner":{"kernel":"kz"}}\n' >h16.jsonl
mkdir h16 && mv h16.jsonl h16/tg.72.jsonl
rtg h16 report h16
check "a record without a pid: named and skipped, exit 4" \
    sh -c "[ $rc = 4 ] && grep -q '^tunerguard: h16/tg.72.jsonl: a record without a pid; skipped' h16.err && ! grep -q 'pid 0\|processes: 0' h16.out"
printf '{"schema":1,"kind":"race","seq":1,"pid":73,"rank":null,"ts_ns":1,"severity":"high","serialized":false,"tuner":{"kernel":"kl"},"location":{"file":null,"line":null,"func":null},"entering":{}}\n' >h17.jsonl
mkdir h17 && mv h17.jsonl h17/tg.73.jsonl
rtg h17 report --json h17
check "a location of nulls: no '?' anywhere" sh -c "[ $rc = 1 ] && ! grep -q '?' h17.out"

# ---- the .txt as the fallback: prevented races, other kinds, an empty .jsonl -----------
mkdir h18
printf '==================\nWARNING: tunerguard: race prevented (serialize): thread entered a tuner another thread is inside (pid=80)\n  Call of Autotuner.run on kernel '"'"'kp'"'"' (x) by thread (tid=81):\n  Severity: high: ...\n  Prevented (serialize mode): the entering thread waited until the tuner was free; the two calls did not overlap.\nSUMMARY: tunerguard: tuner race prevented (serialize) on '"'"'kp'"'"' in Autotuner.run a.py:1 in f\n==================\n' >h18/tg.80.txt
rtg h18 report h18
check "a .txt alone holding a prevented race: read as prevented, exit 0" \
    sh -c "[ $rc = 0 ] && grep -q '1 serialized' h18.out"
mkdir h19
printf '==================\nWARNING: tunerguard: exception in a tuner call that raced (pid=82)\nSUMMARY: tunerguard: exception after tuner race on '"'"'ke'"'"' in Autotuner.run\n==================\n' >h19/tg.82.txt
rtg h19 report h19
check "a .txt alone holding an exception linked to a race: fails the run, exit 1" sh -c "[ $rc = 1 ]"
mkdir h20 && : >h20/tg.84.jsonl
printf '==================\nWARNING: tunerguard: thread entered a tuner another thread is inside (pid=84)\n  Call of Autotuner.run on kernel '"'"'kt'"'"' (x) by thread (tid=85):\n  Severity: high: ...\nSUMMARY: tunerguard: tuner race on '"'"'kt'"'"' in Autotuner.run a.py:1 in f\n==================\n' >h20/tg.84.txt
rtg h20 report h20
check "an empty .jsonl beside its .txt: the .txt read in full, the race counted, exit 1" \
    sh -c "[ $rc = 1 ] && grep -q '^1 race: 1 high' h20.out"

# ---- --trace with no trace files: said, and the races found still decide ----------------
rtg h21 report --trace h21.json h1
check "--trace without trace files: one line, the race still counted: exit 1+4" \
    sh -c "[ $rc = 5 ] && grep -q 'no trace files' h21.err && grep -q '^1 race' h21.out"

# ---- the report cannot be written (a full disk): said, exit status not 0 ----------
if [ -w /dev/full ]; then
    $T "$TG" report h12/tg.51.jsonl >/dev/full 2>h14.err; rc=$?
    check "stdout on a full disk: one line, exit 1" \
        sh -c "[ $rc = 1 ] && grep -q '^tunerguard: cannot write the report to standard output: No space left on device$' h14.err"
fi
finish
