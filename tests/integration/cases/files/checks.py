"""Integration checks, group files: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import json
import os
import re
import shutil
import stat
import subprocess
import textwrap

from harness import PRINT_RAN, expect, jsonl_lines, only_report, opts, prelude, race_prog, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (j) report files in a hostile folder: created new, never through a link,
# never a FIFO; names unique per process; one naming rule

# The program plants things at its own report names before the race, as
# someone who can guess the pid would.
def plant_prog(exts, fifo):
    return program('plant', exts=exts, fifo=fifo) + race_prog(False)


def report_names(res, pid, rank=""):
    """The one txt/jsonl pair of pid: (id, txt path, jsonl path)."""
    txt = [f for f in res.files("tg.*.txt") if os.path.isfile(f) and not os.path.islink(f)]
    expect(len(txt) == 1, "one text report", res)
    m = re.match(r"tg\.%s%s(\.\d+)?\.txt$" % (re.escape(rank), pid), os.path.basename(txt[0]))
    expect(m, "the report is tg.%s%s[.<n>].txt: %s" % (rank, pid, txt[0]), res)
    ident = "%s%s%s" % (rank, pid, m.group(1) or "")
    jsonl = os.path.join(res.tmp, "tg.%s.jsonl" % ident)
    expect(os.path.isfile(jsonl) and not os.path.islink(jsonl), "the JSON Lines report has the same id", res)
    return ident, txt[0], jsonl


PRECIOUS = program('precious')


def check_planted_symlinks(ctx):
    for ext in (".txt", ".jsonl", ".trace.json"):
        prog = PRECIOUS + plant_prog([ext], False)
        res = ctx.run_py(prog, options=opts(trace=1))
        expect(res.rc == 0 and "DONE" in res.out, "%s: the program ran" % ext, res)
        pid = re.search(r"DONE pid (\d+)", res.out).group(1)
        for e in (".txt", ".jsonl", ".trace.json"):
            with open(os.path.join(res.tmp, "precious" + e)) as f:
                expect(f.read() == "keep me\n", "%s: the symlink target precious%s was written" % (ext, e), res)
        ident, txt, _ = report_names(res, pid)
        expect(ident != pid, "%s: a new id, not the planted name" % ext, res)
        with open(txt) as f:
            expect("my_kernel" in f.read(), "%s: the report is in %s" % (ext, txt), res)
        expect(os.path.isfile(os.path.join(res.tmp, "tg.%s.trace.json" % ident)), "%s: the trace has the id" % ext,
               res)
        said = [l for l in res.err.splitlines() if "is a symbolic link" in l]
        expect(len(said) == 1 and ("tg.%s%s" % (pid, ext)) in said[0] and "left alone" in said[0],
               "%s: one line names the symlink" % ext, res)
        expect(said[0].endswith("tg.%s%s instead" % (ident, ext)), "%s: the line names the file of that kind "
               "written instead" % ext, res)
        expect(re.search(r"reports in /\S+/tg\.%s\.txt" % re.escape(ident), res.err),
               "%s: the summary names the file written" % ext, res)


# A log_path whose folder is reached through a link someone else planted in
# a folder anyone may write (a 1777 /tmp): not followed, one line, the report
# on stderr.  As root the program gives the link away (lchown); else skipped.
PLANTED_FOLDER_PROG = program('planted_folder') + race_prog(False)


def check_log_path_through_planted_link(ctx):
    if os.geteuid() != 0:
        print("  (skipped log_path_through_planted_link: needs root to give a link away)")
        return
    res = ctx.run_py(PLANTED_FOLDER_PROG, options="log_path=shared/evil/tg")
    expect(res.rc == 0 and "DONE" in res.out, "the program ran", res)
    expect(os.listdir(os.path.join(res.tmp, "elsewhere")) == [], "nothing written through the link", res)
    said = [l for l in res.err.splitlines() if "symbolic link 'evil'" in l]
    expect(len(said) == 1 and "not followed" in said[0] and "reports go to stderr" in said[0],
           "one line names the link", res)
    expect("WARNING: tunerguard" in res.err and "my_kernel" in res.err, "the report went to stderr", res)


def check_fifo_at_report_path(ctx):
    # the text report opened O_RDWR (a FIFO swallowed it); the trace O_WRONLY (hung until a reader came)
    for ext in (".txt", ".trace.json"):
        trace = ext == ".trace.json"  # the text report alone must say it too
        res = ctx.run_py(plant_prog([ext], True),
                         options=opts(trace=int(trace)), timeout=30)
        expect(not res.timed_out, "%s: a FIFO at the report path hung the program" % ext, res)
        expect(res.rc == 0 and "DONE" in res.out, "%s: the program ran" % ext, res)
        pid = re.search(r"DONE pid (\d+)", res.out).group(1)
        ident, txt, _ = report_names(res, pid)
        expect(ident != pid, "%s: a new id" % ext, res)
        expect(os.path.isfile(os.path.join(res.tmp, "tg.%s.trace.json" % ident)) == trace,
               "%s: the trace has the id" % ext, res)
        expect(stat.S_ISFIFO(os.lstat(os.path.join(res.tmp, "tg.%s%s" % (pid, ext))).st_mode), "the FIFO is left",
               res)
        said = [l for l in res.err.splitlines() if "is a FIFO" in l]
        expect(len(said) == 1, "%s: one line names the FIFO" % ext, res)


def check_fifo_as_suppressions(ctx):
    tmp = ctx.tmpdir()
    fifo = os.path.join(tmp, "supp.fifo")
    os.mkfifo(fifo)
    res = ctx.run_py(PRINT_RAN, options="suppressions=%s" % fifo, timeout=30)
    expect(not res.timed_out, "a FIFO as the suppressions file hung the process", res)
    expect(res.rc == 2 and "PROGRAM RAN" not in res.out, "status 2 before the program runs", res)
    expect(res.err == "tunerguard: suppressions file '%s': not a regular file (a FIFO)\n" % fifo,
           "one line naming the FIFO", res)


def check_rank_one_rule(ctx):
    for rank, infix, json_rank in (("3x", "", None), ("3", "rank3.", 3)):
        res = ctx.run_py(race_prog(False), options=opts(trace=1), extra_env={"RANK": rank})
        expect(res.rc == 0 and "DONE" in res.out, "RANK=%s: the program ran" % rank, res)
        pid = re.search(r"DONE pid (\d+)", res.out).group(1)
        names = sorted(os.path.basename(f) for f in res.files("tg.*"))
        want = sorted("tg.%s%s.%s" % (infix, pid, e) for e in ("txt", "jsonl", "trace.json"))
        expect(names == want, "RANK=%s: every file named tg.%s<pid>.*: %s" % (rank, infix, names), res)
        objs = jsonl_lines(res)
        expect(objs[0].get("rank") == json_rank, "RANK=%s: json rank %r" % (rank, json_rank), res)
        _, text = only_report(res)
        expect(("rank=3" in text) == (json_rank == 3), "RANK=%s: the text's rank" % rank, res)
        bad = [l for l in res.err.splitlines() if "RANK=" in l]
        expect(len(bad) == (1 if json_rank is None else 0), "RANK=%s: one line for a bad rank" % rank, res)


CHDIR_PROG = program('chdir') + race_prog(False)


def check_chdir_after_start(ctx):
    res = ctx.run_py(CHDIR_PROG, options="log_path=tg")
    expect(res.rc == 0 and "DONE" in res.out, "the program ran", res)
    pid = re.search(r"DONE pid (\d+)", res.out).group(1)
    report_names(res, pid)
    expect(not os.listdir(os.path.join(res.tmp, "sub")), "reports followed the chdir into sub/", res)


def check_same_pid_twice(ctx):
    """Two processes that are both pid 1 (a new pid namespace each), one
    folder: two sets of files, each with its own report."""
    unshare = shutil.which("unshare")
    probe = subprocess.run([unshare, "-pf", "--mount-proc", "true"], capture_output=True) if unshare else None
    if not probe or probe.returncode != 0:
        print("  (skipped same_pid_twice: unshare -pf does not work here)")
        return
    tmp = ctx.tmpdir()
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(prelude())
        f.write(textwrap.dedent(race_prog(False)))
    for i in range(2):
        res = ctx.run_argv([unshare, "-pf", "--mount-proc", ctx.python, prog], options=opts(trace=1), cwd=tmp)
        expect(res.rc == 0 and "DONE pid 1\n" in res.out, "run %d: the program ran as pid 1" % i, res)
    names = sorted(os.listdir(tmp))
    txt = [n for n in names if n.endswith(".txt")]
    expect(len(txt) == 2 and "tg.1.txt" in txt, "two text reports, the first tg.1.txt: %s" % names, res)
    other = [n for n in txt if n != "tg.1.txt"][0][:-4]
    expect(re.match(r"tg\.1\.\d+$", other), "the second tg.1.<n>.txt: %s" % names, res)
    for stem in ("tg.1", other):
        for e in (".txt", ".jsonl", ".trace.json"):
            expect(stem + e in names, "%s%s exists: %s" % (stem, e, names), res)
        with open(os.path.join(tmp, stem + ".txt")) as f:
            expect(f.read().count("WARNING: tunerguard") == 1, "%s.txt holds one report" % stem, res)
        with open(os.path.join(tmp, stem + ".jsonl")) as f:
            lines = [json.loads(l) for l in f]
        expect(len(lines) == 1 and lines[0]["seq"] == 1, "%s.jsonl holds one record, seq 1" % stem, res)


CHECKS = [
    check_planted_symlinks,
    check_log_path_through_planted_link,
    check_fifo_at_report_path,
    check_fifo_as_suppressions,
    check_rank_one_rule,
    check_chdir_after_start,
    check_same_pid_twice,
]
