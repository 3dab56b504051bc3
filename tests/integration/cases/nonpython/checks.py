"""Integration checks, group nonpython: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import os
import shutil

from harness import expect


NONPYTHON = [
    ["/bin/true"],
    ["/bin/false"],
    ["bash", "-c", "echo hi; echo err >&2; exit 4"],
    ["gcc", "--version"],
    ["ldconfig", "-p"],
]


def check_nonpython(ctx):
    for argv in NONPYTHON:
        if shutil.which(argv[0]) is None:
            print("  (skipped %s: not installed)" % argv[0])
            continue
        base = ctx.run_argv(argv, preload=False)
        for options in (None, "mode=serialize:verbosity=2"):
            res = ctx.run_argv(argv, options=options)
            expect((res.rc, res.out, res.err) == (base.rc, base.out, base.err),
                   "%s with the preload (options %r) differs from without (baseline rc=%s)"
                   % (argv, options, base.rc), res)
            expect(not os.listdir(res.tmp), "%s wrote files" % argv, res)


CHECKS = [
    check_nonpython,
]
