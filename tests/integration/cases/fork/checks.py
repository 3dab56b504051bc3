"""Integration checks, group fork: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import os

from harness import expect, no_files, norm, opts, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (i) fork while another thread is inside a tuner

FORK_PROG = program('fork')


def check_fork(ctx):
    for mode in ("detect", "serialize"):
        res = ctx.run_py(FORK_PROG, options=opts(mode=mode), timeout=30)
        expect(not res.timed_out, "%s: the fork child hung (blocked in tunerguard?)" % mode, res)
        expect(res.rc == 0 and "CHILD_STATUS 0" in res.out and "DONE" in res.out,
               "%s: the child called the tuner and exited 0" % mode, res)
        expect("WARNING" not in res.err and "race" not in res.err, "%s: nothing reported" % mode, res)
        no_files(res)


FORK_AFTER_RACE_PROG = program('fork_after_race')


def check_fork_child_after_race(ctx):
    """A child forked after the parent reported must not repeat the parent's
    summary nor take exitcode= for races it did not see (multiprocessing and
    compile workers fork like this)."""
    res = ctx.run_py(FORK_AFTER_RACE_PROG, options=opts(exitcode=7), timeout=30)
    expect(not res.timed_out, "hung", res)
    expect("DONE" in res.out, "parent ran", res)
    expect(res.rc == 7, "the parent reported: exitcode=7", res)
    with open(os.path.join(res.tmp, "child_stderr.log")) as f:
        child_err = f.read()
    expect("CHILD_EXIT 0" in res.out,
           "the child reported nothing, its status must stay 0 (child stderr: %r)" % norm(child_err), res)
    expect("tunerguard" not in child_err, "the child printed a summary: %r" % norm(child_err), res)


CHECKS = [
    check_fork,
    check_fork_child_after_race,
]
