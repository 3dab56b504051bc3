"""Integration checks, group exit: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import json
import re

from harness import Fail, expect, jsonl_lines, only_report, opts, race_prog, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (f) exitcode and halt_on_race

def check_exit_with_audit_hook_and_open_file(ctx):
    """A program with an audit hook of its own (the prelude's) that leaves a
    file open at exit, after a guarded import: the interpreter finalizes
    cleanly.  On 3.13, Python code run by tunerguard that late (a walk of
    every metaclass through type.__subclasses__()) corrupts the dict free
    list, and the process dies of SIGSEGV at exit."""
    res = ctx.run_py(program('exit_with_audit_hook_and_open_file'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out and "fatal signal" not in res.err,
           "exit status 0, no fatal signal at finalization (%s)" % res.rc, res)


def check_exitcode(ctx):
    res = ctx.run_py(race_prog(False) + "\nsys.exit(3)\n", options=opts(exitcode=7))
    expect(res.rc == 7, "exitcode=7 after a race", res)
    expect("DONE" in res.out, "program ran to the end", res)
    res = ctx.run_py(program('exitcode'), options=opts(exitcode=7))
    expect(res.rc == 0, "no race: the program's own status 0", res)
    expect(res.err == "", "nothing on stderr", res)
    res = ctx.run_py(program('exitcode_2'), options=opts(exitcode=7))
    expect(res.rc == 5, "no race: the program's own status 5", res)


def check_prevented_is_race(ctx):
    """serialize: a race the wait prevented leaves the exit status alone and
    does not halt; with prevented_is_race=1 it sets exitcode= and halts as a
    race does (the same program, the same one prevented race)."""
    prog = race_prog(True)
    res = ctx.run_py(prog, options=opts(mode="serialize", exitcode=7))
    expect(res.rc == 0 and "DONE" in res.out, "exitcode=7, prevented race: the program's own status 0", res)
    res = ctx.run_py(prog, options=opts(mode="serialize", exitcode=7, prevented_is_race=1))
    expect(res.rc == 7 and "DONE" in res.out, "exitcode=7, prevented_is_race=1: status 7 (%s)" % res.rc, res)
    res = ctx.run_py(prog, options=opts(mode="serialize", halt_on_race=1))
    expect(res.rc == 0 and "DONE" in res.out, "halt_on_race=1, prevented race: the program runs to its end", res)
    res = ctx.run_py(prog, options=opts(mode="serialize", halt_on_race=1, exitcode=9, prevented_is_race=1))
    expect("DONE" not in res.out and res.rc == 9,
           "halt_on_race=1, prevented_is_race=1: halted at the race with exitcode=9 (%s)" % res.rc, res)
    _, text = only_report(res)
    expect(re.search(r"^WARNING: tunerguard: race prevented \(serialize\)", text, re.M)
           and text.rstrip("\n").endswith("=================="), "the prevented race's report is complete", res)


HALT_PROG = program('halt')


def check_halt_on_race(ctx):
    for extra, want_rc in (({}, None), ({"exitcode": 9}, 9), ({"trace": 1}, None)):
        res = ctx.run_py(HALT_PROG, options=opts(halt_on_race=1, **extra))
        expect("BEFORE" in res.out, "program started", res)
        expect("AFTER" not in res.out, "the code after the race must not run", res)
        if want_rc is None:
            expect(res.rc not in (0, None) and res.rc > 0, "non-zero status after halting", res)
        else:
            expect(res.rc == want_rc, "halt with exitcode=%d" % want_rc, res)
        _, text = only_report(res)
        expect(text.count("WARNING: tunerguard") == 1 and "SUMMARY: tunerguard" in text
               and text.rstrip("\n").endswith("=================="), "report complete", res)
        expect(len(jsonl_lines(res)) == 1, "json line complete", res)
        expect(re.search(r"^tunerguard: 1 race reported", res.err, re.M), "summary line", res)
        if extra.get("trace"):
            tr = res.files("tg.*.trace.json")
            expect(len(tr) == 1, "trace=1: one trace file", res)
            try:
                with open(tr[0]) as f:
                    json.load(f)  # closed with its ']' before the halt
            except ValueError as e:
                raise Fail("the trace of a halted process is not valid JSON: %s" % e)


CHECKS = [
    check_exitcode,
    check_halt_on_race,
    check_prevented_is_race,
    check_exit_with_audit_hook_and_open_file,
]
