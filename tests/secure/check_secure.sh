#!/bin/sh
# Secure execution (AT_SECURE: setuid/setgid): the paths in
# TUNERGUARD_OPTIONS are ignored with one line; without it nothing is said.
#   check_secure.sh T_SECURE
# T_SECURE is linked against libtunerguard.so with an absolute RUNPATH.  A
# setgid copy (group nogroup) run as root is secure yet still reads the
# build tree.  Skips (77) when not root or when the setgid bit has no effect
# (a nosuid mount).
set -u
prog=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to make a setgid copy"; exit 77; }
grp=$(getent group nogroup >/dev/null && echo nogroup || echo nobody)
d=$(mktemp -d /tmp/tg_secure_XXXXXX)
trap 'rm -rf "$d"' EXIT
cp "$prog" "$d/plain" && cp "$prog" "$d/setgid" && chgrp "$grp" "$d/setgid" && chmod 2755 "$d/setgid" || exit 1
mkfifo "$d/supp.fifo"
opts="log_path=$d/tg:suppressions=$d/supp.fifo:cupti_path=$d/evil.so:trace=1"
fail=0

out=$(TUNERGUARD_OPTIONS=$opts timeout 20 "$d/setgid" 2>"$d/err")
case $out in
AT_SECURE=1) ;;
AT_SECURE=0) echo "SKIP: the setgid bit had no effect here (nosuid?)"; exit 77 ;;
*) echo "FAIL: setgid run: stdout '$out'"; cat "$d/err"; exit 1 ;;
esac
want="tunerguard: secure execution (a setuid or setgid program): log_path, suppressions, cupti_path, trace in TUNERGUARD_OPTIONS ignored; reports go to stderr"
if [ "$(cat "$d/err")" != "$want" ]; then
    echo "FAIL: setgid run: stderr is not the one line"; echo "  got:  $(cat "$d/err")"; echo "  want: $want"; fail=1
fi

# the same with mode=off: nothing at all
out=$(TUNERGUARD_OPTIONS="$opts:mode=off" timeout 20 "$d/setgid" 2>"$d/err")
[ -s "$d/err" ] && { echo "FAIL: mode=off under secure execution said: $(cat "$d/err")"; fail=1; }

# not secure: the same options, silent
out=$(TUNERGUARD_OPTIONS=$opts timeout 20 "$d/plain" 2>"$d/err")
[ "$out" = "AT_SECURE=0" ] || { echo "FAIL: plain run: stdout '$out'"; fail=1; }
[ -s "$d/err" ] && { echo "FAIL: plain run said: $(cat "$d/err")"; fail=1; }

[ $fail = 0 ] && echo "PASS secure/paths_ignored"
exit $fail
