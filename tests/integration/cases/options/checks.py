"""Integration checks, group options: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import os
import re
import textwrap

from harness import PRINT_RAN, expect, no_files, race_prog


def check_bad_options(ctx):
    cases = [
        ("mode=fast", "'mode'", "detect, serialize, off"),
        ("bogus=1", "'bogus'", "mode, log_path"),
        ("verbosity=9", "'verbosity'", "0 to 2"),
        ("exitcode=300", "'exitcode'", "-1 to 255"),
        ("halt_on_race=yes", "'halt_on_race'", "0, 1"),
        ("targets=nocolon", "'targets'", "module:Class.method"),
        # a misspelt key after a targets= value (which holds ':') is named, not targets
        ("targets=a:B.c:typo=1", "unknown option 'typo'", "mode, log_path"),
    ]
    for options, key, valid in cases:
        res = ctx.run_py(PRINT_RAN, options=options)
        expect(res.rc == 2, "%s: exit status 2" % options, res)
        expect("PROGRAM RAN" not in res.out, "%s: the program must not run" % options, res)
        lines = res.err.splitlines()
        expect(len(lines) == 1, "%s: exactly one stderr line" % options, res)
        expect(lines[0].startswith("tunerguard: ") and key in lines[0] and valid in lines[0],
               "%s: the line names %s and the valid choices (%s)" % (options, key, valid), res)
        no_files(res)


def check_control_bytes_escaped(ctx):
    """User text echoed in a message shows control bytes as \\xNN: an ESC
    never reaches the terminal, a newline never splits the one line."""
    tmp = ctx.tmpdir()
    supp = os.path.join(tmp, "s.supp")
    with open(supp, "w") as f:
        f.write("race:ok\nbo\x1b[2Jgus:x\n")
    cases = [
        ("mode=\x1b[31mred", "bad value '\\x1b[31mred' for option 'mode'"),
        ("log_path='a\nSUMMARY: forged'", "bad value 'a\\x0aSUMMARY: forged' for option 'log_path'"),
        ("suppressions=%s" % supp, "line 2: unknown type 'bo\\x1b[2Jgus'"),
    ]
    for options, want in cases:
        res = ctx.run_py(PRINT_RAN, options=options)
        expect(res.rc == 2 and "PROGRAM RAN" not in res.out, "%r: exit status 2 before the program" % options, res)
        expect("\x1b" not in res.err, "%r: no ESC byte on stderr" % options, res)
        lines = res.err.splitlines()
        expect(len(lines) == 1 and lines[0].startswith("tunerguard: ") and want in lines[0],
               "%r: one line holding %s" % (options, want), res)


def check_unterminated_quote(ctx):
    for options, q in (("mode=serialize:log_path='my reports/tg", "'"), ('log_path="a:b/tg:verbosity=1', '"')):
        res = ctx.run_py(PRINT_RAN, options=options)
        expect(res.rc == 2, "%s: exit status 2" % options, res)
        expect("PROGRAM RAN" not in res.out, "%s: the program must not run" % options, res)
        lines = res.err.splitlines()
        expect(lines == ["tunerguard: unterminated quote in the value of option 'log_path' in TUNERGUARD_OPTIONS "
                         "(it begins with %s and has no closing %s)" % (q, q)],
               "%s: exactly the one line naming log_path" % options, res)
        no_files(res)


# A quoted log_path holds spaces and ':' (and the other quote kind): the
# reports land there.
QUOTED_DIRS = [("my reports", "'"), ("a:b", '"'), ("it's here: x", '"'), ('say "hi" now', "'")]


def check_quoted_log_path(ctx):
    for d, q in QUOTED_DIRS:
        prog = "os.makedirs(%r)\n" % d + textwrap.dedent(race_prog(False))
        res = ctx.run_py(prog, options="log_path=%s%s/tg%s:verbosity=0" % (q, d, q))
        expect(res.rc == 0 and "DONE" in res.out, "log_path=%s%s/tg%s: the program ran" % (q, d, q), res)
        pid = re.search(r"DONE pid (\d+)", res.out).group(1)
        for ext in ("txt", "jsonl"):
            path = os.path.join(res.tmp, d, "tg.%s.%s" % (pid, ext))
            expect(os.path.isfile(path), "the report is %s" % path, res)
            with open(path) as f:
                expect("my_kernel" in f.read(), "%s names the kernel" % path, res)
        expect(not res.files("tg.*"), "nothing written beside the program", res)


def check_help(ctx):
    res = ctx.run_py(PRINT_RAN, options="help=1")
    expect(res.rc == 0, "help=1 exits 0", res)
    expect("PROGRAM RAN" not in res.out, "the program must not run", res)
    for key in ("mode", "log_path", "targets", "exitcode", "halt_on_race", "verbosity", "help"):
        expect(re.search(r"^\s+%s\s" % key, res.out, re.M), "help lists %s" % key, res)


CHECKS = [
    check_bad_options,
    check_control_bytes_escaped,
    check_unterminated_quote,
    check_quoted_log_path,
    check_help,
]
