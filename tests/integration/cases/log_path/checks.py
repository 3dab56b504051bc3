"""Integration checks, group log_path: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import re

from harness import expect, no_files, race_prog


# --------------------------------------------------------------------------
# (g) log_path into a missing directory

def check_log_path_missing_dir(ctx):
    res = ctx.run_py(race_prog(False), options="log_path=missing/dir/tg")
    expect(res.rc == 0 and "DONE" in res.out, "program unaffected", res)
    warn = [l for l in res.err.splitlines() if "cannot write report file" in l]
    expect(len(warn) == 1, "one warning line", res)
    expect(re.search(r"missing/dir/tg\.\d+\.txt", warn[0]), "the warning names the file", res)
    expect(res.err.count("WARNING: tunerguard") == 1 and "my_kernel" in res.err, "the report on stderr", res)
    no_files(res)


CHECKS = [
    check_log_path_missing_dir,
]
