"""Integration checks, group copies: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import os
import re
import shutil

from harness import expect, jsonl_lines, only_report, opts, race_prog


# --------------------------------------------------------------------------
# (l) two copies of the library in one process (a Dockerfile's
# ENV LD_PRELOAD=... plus `tunerguard run`'s copy): the first in
# LD_PRELOAD's order serves, the other stays inert.

def two_copies(ctx):
    """Two folders, each with its own copy of the loader and the core; the
    LD_PRELOAD value naming both, and the first copy's path."""
    paths = []
    for name in ("first", "second"):
        d = os.path.join(ctx.tmpdir(), name)
        os.mkdir(d)
        for f in ("libtunerguard.so", "libtunerguard_core.so"):
            src = os.path.join(os.path.dirname(ctx.lib), f)
            if os.path.exists(src):
                shutil.copy2(src, d)
        paths.append(os.path.join(d, "libtunerguard.so"))
    return ":".join(paths), paths


def check_two_copies_detect(ctx):
    pre, paths = two_copies(ctx)
    res = ctx.run_py(race_prog(False), options=opts(verbosity=1), extra_env={"LD_PRELOAD": pre})
    expect(res.rc == 0 and "DONE" in res.out, "the program ran to its end", res)
    expect("RecursionError" not in res.err and "Traceback" not in res.err, "no RecursionError", res)
    path, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1, "one report", res)
    expect(len(jsonl_lines(res)) == 1, "one JSON line", res)
    inert = [l for l in res.err.splitlines() if "stays inert" in l]
    expect(len(inert) == 1 and inert[0].startswith("tunerguard: %s serves this process" % paths[0])
           and paths[1] in inert[0], "one line (verbosity=1): the first copy serves, the second stays inert", res)
    quiet = ctx.run_py(race_prog(False), options=opts(), extra_env={"LD_PRELOAD": pre})
    expect(quiet.rc == 0 and "stays inert" not in quiet.err, "nothing said about the copies at verbosity=0", quiet)


def check_two_copies_serialize(ctx):
    pre, _ = two_copies(ctx)
    res = ctx.run_py(race_prog(True), options=opts(mode="serialize"), extra_env={"LD_PRELOAD": pre})
    expect(res.rc == 0 and "DONE" in res.out and "Traceback" not in res.err, "program completed", res)
    expect("WAIT_EVENTS 1" in res.out, "tunerguard.serialize_wait raised once", res)
    expect("ORDER victim:start,victim:end,other:start,other:end" in res.out,
           "the second call ran only after the first ended", res)
    expect(len(re.findall(r"^tunerguard: .*serialized", res.err, re.M)) == 1, "one summary line", res)


CHECKS = [
    check_two_copies_detect,
    check_two_copies_serialize,
]
