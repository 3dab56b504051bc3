# tunerguard --help, help SUB, SUB --help, usage errors, --man and the committed man page.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_tg top --help
check "--help exits 0" [ "$rc" = 0 ]
check "--help lists the commands" sh -c 'grep -q "^  run " top.out && grep -q "^  repro " top.out && grep -q "^  report " top.out && grep -q "^  doctor " top.out'
for sub in run repro report doctor; do
    run_tg "$sub" "$sub" --help
    check "$sub --help exits 0 with its usage" sh -c "[ $rc = 0 ] && grep -q '^usage: tunerguard $sub' $sub.out && grep -q '^exit status:' $sub.out"
    run_tg "h$sub" help "$sub"
    check "help $sub is the same text" cmp -s "$sub.out" "h$sub.out"
    run_tg "x$sub" "$sub" --no-such-flag
    check "$sub --no-such-flag: exit 2, usage on stderr, nothing on stdout" sh -c "[ $rc = 2 ] && grep -q '^usage: tunerguard $sub' x$sub.err && grep -q \"unknown flag '--no-such-flag'\\|unexpected argument\" x$sub.err && [ ! -s x$sub.out ]"
done
run_tg none
check "no command: exit 2 and usage" sh -c "[ $rc = 2 ] && grep -q '^usage: tunerguard' none.err"
run_tg unk frobnicate
check "unknown command: exit 2" sh -c "[ $rc = 2 ] && grep -q \"unknown command 'frobnicate'\" unk.err"
run_tg esc "$(printf 'frob\033[2Jnicate')"
check "an unknown command with a control byte: escaped in the error line" sh -c "[ $rc = 2 ] && grep -qxF \"tunerguard: unknown command 'frob\\\\x1b[2Jnicate'\" esc.err && ! grep -q \"\$(printf '\\033')\" esc.err"
run_tg hx help frobnicate
check "help of an unknown command: exit 2" [ "$rc" = 2 ]
run_tg man --man
check "--man is roff" sh -c "[ $rc = 0 ] && head -2 man.out | grep -q '^.TH TUNERGUARD 1' && grep -q '^.SS run' man.out && grep -q '^.SS doctor' man.out"
check "docs/tunerguard.1 is up to date (regenerate: tunerguard --man > docs/tunerguard.1)" cmp -s man.out "$SRC/docs/tunerguard.1"
if command -v man >/dev/null 2>&1; then
    check "man renders the page" sh -c "MANWIDTH=80 man -l man.out 2>/dev/null | grep -q 'tunerguard run'"
fi
finish
