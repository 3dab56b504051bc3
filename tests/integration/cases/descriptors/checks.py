"""Integration checks, group descriptors: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import glob
import json
import os
import re
import stat
import textwrap

from harness import Fail, expect, jsonl_lines, only_report, opts, prelude, race_prog, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# The program closes what it inherited and opens files of its own, which take
# the lowest numbers: where libunwind's address-validation pipe (3, 4) and the
# report files were.  Each race's second entrant is a new thread (its first
# native capture: libunwind validates addresses at the stack's outermost
# frame).  The files must be untouched: the input reads whole from its first
# byte, nothing is written to the others; the reports and the trace (trace=1)
# are in their own files.
def own_fds_prog(serialize):
    return program('own_fds', serialize=serialize)


def check_program_fds_untouched(ctx):
    for serialize in (False, True):
        tmp = ctx.tmpdir()
        with open(os.path.join(tmp, "in.txt"), "w") as f:
            f.write("0123456789")
        prog = os.path.join(tmp, "prog.py")
        with open(prog, "w") as f:
            f.write(prelude())
            f.write(own_fds_prog(serialize))
        mode = "serialize" if serialize else "detect"
        res = ctx.run_argv([ctx.python, prog], options=opts(mode=mode, trace=1), cwd=tmp)
        expect(res.rc == 0 and "DONE" in res.out, "the program ran", res)
        expect("FDS 3 4" in res.out, "the program's files are fds 3 and 4", res)
        expect("IN 0123456789\n" in res.out, "in.txt read whole from its first byte", res)
        for i in range(8):
            expect(os.path.getsize(os.path.join(tmp, "out%d.bin" % i)) == 0, "nothing written into out%d.bin" % i,
                   res)
        expect(len(res.files("tg.*.txt")) == 1, "%s: the races were reported" % mode, res)
        traces = res.files("tg.*.trace.json")
        expect(len(traces) == 1, "%s: one trace" % mode, res)
        with open(traces[0]) as f:
            try:
                json.load(f)
            except ValueError as e:
                raise Fail("%s: the trace does not parse: %s" % (mode, e))


# Started with stderr closed (2>&-): the program's first file takes fd 2.
# With the report folder missing, or log_path=stderr, nothing of tunerguard's
# may land in that file; log_path=stderr moves the reports to the default
# files, whose text report says so on its first line.
CLOSED_STDERR_PROG = program('closed_stderr')

# The same with the target imported and a race reported (libunwind's pipe,
# the report files, the trace opened) before the program opens its file: it
# still gets fd 2, tunerguard holds no standard number.  symbolize=1: libdw
# (file:line, symbolize=2) keeps the ELF files it read open, wherever they
# landed (a limit, not tested here).
CLOSED_STDERR_LATE_PROG = program('closed_stderr_late')


def check_stderr_closed_at_start(ctx):
    for log_path, body in (("nodir/tg", CLOSED_STDERR_PROG), ("stderr", CLOSED_STDERR_PROG),
                           ("tg:trace=1:symbolize=1", CLOSED_STDERR_LATE_PROG)):
        tmp = ctx.tmpdir()
        prog = os.path.join(tmp, "prog.py")
        with open(prog, "w") as f:
            f.write(prelude())
            f.write(textwrap.dedent(body))
        res = ctx.run_argv(["/bin/sh", "-c", 'exec "$0" prog.py 2>&-', ctx.python], cwd=tmp,
                           options="log_path=" + log_path)
        expect(res.rc == 0 and "DONE" in res.out and "FD 2\n" in res.out, "%s: the program ran, its file "
               "is fd 2" % log_path, res)
        with open(os.path.join(tmp, "mine.log"), "rb") as f:
            got = f.read()
        expect(got == b"mine\n", "%s: the program's file holds only what it wrote: %r" % (log_path, got[:300]),
               res)
        txt = res.files("tunerguard.*.txt")
        if log_path == "stderr":
            expect(len(txt) == 1, "stderr: the report in tunerguard.<pid>.txt", res)
            with open(txt[0]) as f:
                text = f.read()
            expect(text.startswith("tunerguard: log_path=stderr, but stderr was closed when the process "
                                   "started: the reports are in this file\n") and "my_kernel" in text,
                   "stderr: one line says why, then the report", res)
        elif log_path == "nodir/tg":
            expect(not txt, "nodir: no report file elsewhere", res)
        else:
            _, text = only_report(res)
            expect(text.count("WARNING: tunerguard") >= 1 and text.endswith("==================\n"),
                   "tg: the report whole in its own file", res)


# stderr open at start; the program closes fd 2 and its next file takes the
# number (a sloppy daemonization): a race, then exit.  What that file holds
# is the program's alone; a log the program opens for appending onto fd 2
# (dup2: its stderr redirected) gets tunerguard's exit line.
def stderr_taken_prog(append_log):
    return program('stderr_taken', append_log=append_log)


def check_stderr_taken_by_program_file(ctx):
    for log_path, append_log in (("tg", False), ("stderr", False), ("tg", True)):
        res = ctx.run_py(stderr_taken_prog(append_log), options="log_path=" + log_path)
        what = "log_path=%s%s" % (log_path, ", a log on fd 2" if append_log else "")
        expect(res.rc == 0 and "DONE" in res.out and "FD 2\n" in res.out, "%s: ran; its file is fd 2" % what, res)
        with open(os.path.join(res.tmp, "data.bin"), "rb") as f:
            got = f.read()
        expect(got == b"DATA", "%s: the program's file holds only what it wrote: %r" % (what, got[:300]), res)
        if log_path == "tg":
            _, text = only_report(res)
            expect(text.count("WARNING: tunerguard") == 1, "%s: the report in its file" % what, res)
        else:
            txt = res.files("tunerguard.*.txt")
            text = open(txt[0]).read() if len(txt) == 1 else ""
            expect(text.startswith("tunerguard: log_path=stderr, but fd 2 became a file the program opened in "
                                   "stderr's place: the reports from here on are in this file\n")
                   and text.count("WARNING: tunerguard") == 1, "%s: the report moved to tunerguard.<pid>.txt, "
                   "one line says why" % what, res)
        if append_log:
            with open(os.path.join(res.tmp, "log.txt")) as f:
                log = f.read()
            expect(re.match(r"tunerguard: 1 race reported", log), "%s: the exit line in the log: %r" % (what, log), res)


# The process starts with stderr on a file (start.txt); the program then
# puts another file of the same folder, so the same filesystem, on fd 2.  fd
# 2's identity is its device and inode together: data.bin is the program's
# file, not the stderr it started with, and tunerguard writes nothing there.
STDERR_SAME_FS_PROG = program('stderr_same_fs')


def check_stderr_file_then_another_file_same_fs(ctx):
    for log_path in ("tg", "stderr"):
        res = ctx.run_py(STDERR_SAME_FS_PROG, options="log_path=" + log_path, stderr_file="start.txt")
        expect(res.rc == 0 and "DONE" in res.out, "log_path=%s: ran" % log_path, res)
        expect("SAME_DEV True SAME_INO False" in res.out, "one filesystem, another inode", res)
        with open(os.path.join(res.tmp, "data.bin"), "rb") as f:
            got = f.read()
        expect(got == b"DATA", "log_path=%s: the program's file holds only what it wrote: %r" % (log_path, got[:300]),
               res)
        txt = res.files("tg.*.txt" if log_path == "tg" else "tunerguard.*.txt")
        text = open(txt[0]).read() if len(txt) == 1 else ""
        expect(text.count("WARNING: tunerguard") == 1, "log_path=%s: the report in a file of its own" % log_path, res)


# A test runner's capture: an unlinked temporary file put on fd 2 (pytest's
# capfd/--capture=fd).  It is a stderr: the report goes there.
STDERR_CAPTURE_PROG = program('stderr_capture')


def check_stderr_capture_by_test_runner(ctx):
    res = ctx.run_py(STDERR_CAPTURE_PROG, options="log_path=stderr")
    expect(res.rc == 0 and "DONE" in res.out, "the program ran", res)
    expect("CAPTURED 1" in res.out, "the report went to the capture file on fd 2", res)


# fd 2 made a pipe by the program: its reader gone (SIGPIPE's default
# restored, as command-line tools do), or alive and never reading, the pipe
# full.  tunerguard's exit line must neither kill the process nor hang it.
def stderr_pipe_prog(full, serialize):
    return program('stderr_pipe', full=full, serialize=serialize)


def check_stderr_pipe_broken_or_full(ctx):
    for full in (False, True):
        for options in (opts(), opts(mode="serialize"), "log_path=stderr"):
            res = ctx.run_py(stderr_pipe_prog(full, "serialize" in options), options=options,
                             timeout=60)
            what = "%s, %s" % ("a full pipe" if full else "a pipe without reader", options)
            expect(res.rc == 0 and "DONE" in res.out, "%s: the program's status kept (%s)" % (what, res.rc), res)


# The same planted link in a folder its group may write (0775, 0770): not
# followed either; report files created in such a folder are 0600.
def group_folder_prog(mode):
    return program('group_folder', mode=mode) + race_prog(False)


def check_group_writable_folder(ctx):
    if os.geteuid() != 0:
        print("  (skipped group_writable_folder: needs root to give a link away)")
        return
    for mode in ("0o775", "0o770"):
        res = ctx.run_py(group_folder_prog(mode), options="log_path=shared/evil/tg")
        expect(res.rc == 0 and "DONE" in res.out, "%s: the program ran" % mode, res)
        expect(os.listdir(os.path.join(res.tmp, "elsewhere")) == [], "%s: nothing written through the link" % mode,
               res)
        said = [l for l in res.err.splitlines() if "symbolic link 'evil'" in l]
        expect(len(said) == 1 and "not followed" in said[0], "%s: one line names the link" % mode, res)
        res = ctx.run_py(group_folder_prog(mode), options="log_path=shared/tg")
        expect(res.rc == 0 and "DONE" in res.out, "%s: the program ran" % mode, res)
        made = glob.glob(os.path.join(res.tmp, "shared", "tg.*"))
        expect(len(made) == 2, "%s: the reports in shared/: %s" % (mode, made), res)
        for f in made:
            expect(stat.S_IMODE(os.stat(f).st_mode) == 0o600, "%s: %s is 0600" % (mode, f), res)


# A disk that fills: after the first report no file may grow past a limit
# (RLIMIT_FSIZE, SIGXFSZ ignored: a write past it fails with EFBIG, part
# way through a record).  Every line of the .jsonl parses, the .txt holds
# whole reports only; one line per file says it failed.
FULL_DISK_PROG = program('full_disk')


def check_full_disk(ctx):
    res = ctx.run_py(FULL_DISK_PROG, options=opts(verbosity=2))
    expect(res.rc == 0 and "DONE" in res.out, "the program ran", res)
    objs = jsonl_lines(res)  # each line parses
    expect(len(objs) >= 1, "the first record kept", res)
    _, text = only_report(res)
    blocks = text.count("==================\n")
    expect(blocks % 2 == 0 and blocks // 2 == text.count("\nSUMMARY: tunerguard:"),
           "the .txt holds whole reports only", res)
    expect(text.endswith("==================\n"), "the .txt ends with a whole report", res)
    said = [l for l in res.err.splitlines() if l.startswith("tunerguard: cannot write report file")]
    expect(len(said) == 2 and all("File too large" in l for l in said), "one line for each file", res)
    expect(res.err.count("WARNING: tunerguard") >= 1, "the failed report on stderr", res)


CHECKS = [
    check_program_fds_untouched,
    check_stderr_closed_at_start,
    check_stderr_taken_by_program_file,
    check_stderr_file_then_another_file_same_fs,
    check_stderr_pipe_broken_or_full,
    check_stderr_capture_by_test_runner,
    check_group_writable_folder,
    check_full_disk,
]
