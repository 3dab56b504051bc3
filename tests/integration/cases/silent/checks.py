"""Integration checks, group silent: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""

from harness import expect, no_files, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (a) silence where there is nothing to do

def check_silent_python(ctx):
    res = ctx.run_py(program('silent_python'))
    expect(res.rc == 3, "exit status must be the program's (3)", res)
    expect(res.out == "hello\n", "stdout unchanged", res)
    expect(res.err == "", "nothing on stderr", res)
    no_files(res)


def check_silent_exec_at_finalization(ctx):
    """exec() in a __del__ that runs in finalization's last collection, when
    sys.modules is gone, in a process that imports no target: as without
    tunerguard (the lookup of a target's package aborted the process)."""
    res = ctx.run_py(program('silent_exec_at_finalization'))
    expect(res.rc == 0 and res.err == "" and "del ran" in res.out, "ran and exited as without tunerguard", res)


def check_silent_python_default_log_path(ctx):
    # default log_path: files would land in cwd; none must be created
    res = ctx.run_py(program('silent_python_default_log_path'), options=None)
    expect(res.rc == 0 and res.out == "ran\n", "program unaffected", res)
    expect(res.err == "", "nothing on stderr for a single-threaded tuner call", res)
    no_files(res)


CHECKS = [
    check_silent_python,
    check_silent_exec_at_finalization,
    check_silent_python_default_log_path,
]
