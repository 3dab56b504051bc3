#!/usr/bin/env python3
"""Preload integration tests for libtunerguard.so.

    run_all.py --lib build/libtunerguard.so --python ~/.pyenv/versions/3.12.1/bin/python [--only race,fork]
    run_all.py --lib build/libtunerguard.so --python none --only nonpython

Each check writes a small Python program into a fresh temporary directory and
runs it with LD_PRELOAD (and TUNERGUARD_OPTIONS) set in the child's
environment only, with Python's debug allocator hooks (PYTHONMALLOC=debug,
unless the environment names an allocator): memory tunerguard reads after
CPython freed it is overwritten at once, so such a read fails the check.
The fake Triton package under fixtures/ is put on sys.path by the program
itself.  Overlaps are forced with threading.Event and, in
serialize mode, with an audit hook on "tunerguard.serialize_wait": no sleeps.

Prints one line per check (PASS/FAIL/SKIP), exits 0 when all passed, 1 when
any failed, 77 when the interpreter is not installed (ctest SKIP_RETURN_CODE).
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
SERIALIZE_FIXTURE = os.path.join(HERE, "..", "serialize", "fixture")  # tgfix.slots: start_in
SKIP = 77
CHILD_TIMEOUT = 60


class Fail(Exception):
    pass


def norm(text):
    """Normalise pids, tids and addresses for messages and matching."""
    text = re.sub(r"0x[0-9a-fA-F]+", "<addr>", text)
    text = re.sub(r"(pid=|tid=|\.)\d{2,}(?=[.\s,)]|$)", r"\1<n>", text)
    return text


class Result:
    def __init__(self, rc, out, err, tmp, timed_out=False):
        self.rc, self.out, self.err, self.tmp, self.timed_out = rc, out, err, tmp, timed_out

    def describe(self):
        return "rc=%s%s\n--- stdout ---\n%s--- stderr ---\n%s--- files ---\n%s" % (
            self.rc, " (TIMED OUT)" if self.timed_out else "", self.out, self.err,
            "\n".join(sorted(os.listdir(self.tmp))))

    def files(self, pattern):
        return sorted(glob.glob(os.path.join(self.tmp, pattern)))


class Ctx:
    def __init__(self, python, lib, keep):
        self.python, self.lib, self.keep = python, lib, keep
        self.tmps = []

    def tmpdir(self):
        d = tempfile.mkdtemp(prefix="tg_it_")
        self.tmps.append(d)
        return d

    def cleanup(self):
        if not self.keep:
            for d in self.tmps:
                shutil.rmtree(d, ignore_errors=True)

    def env(self, options=None, preload=True, extra_env=None):
        env = dict(os.environ)
        for k in ("LD_PRELOAD", "TUNERGUARD_OPTIONS", "PYTHONPATH", "RANK", "PYTHONSTARTUP",
                  "PYTHONWARNINGS"):
            env.pop(k, None)
        env.setdefault("PYTHONMALLOC", "debug")
        if preload:
            env["LD_PRELOAD"] = self.lib
        if options is not None:
            env["TUNERGUARD_OPTIONS"] = options
        env.update(extra_env or {})
        return env

    def run_argv(self, argv, options=None, preload=True, cwd=None, timeout=CHILD_TIMEOUT, extra_env=None,
                 stderr_file=None):
        """stderr_file: the child starts with its stderr on this file (in cwd,
        written from its start); res.err is what the file holds after."""
        cwd = cwd or self.tmpdir()
        err_f = open(os.path.join(cwd, stderr_file), "wb") if stderr_file else None
        p = subprocess.Popen(argv, cwd=cwd, env=self.env(options, preload, extra_env), stdout=subprocess.PIPE,
                             stderr=err_f or subprocess.PIPE, start_new_session=True)
        timed_out = False
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the child and any grandchild it forked
            out, err = p.communicate()
            timed_out = True
        if err_f:
            err_f.close()
            with open(os.path.join(cwd, stderr_file), "rb") as f:
                err = f.read()
        return Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), cwd,
                      timed_out=timed_out)

    def run_py(self, body, options=None, preload=True, timeout=CHILD_TIMEOUT, extra_env=None, stderr_file=None):
        tmp = self.tmpdir()
        prog = os.path.join(tmp, "prog.py")
        with open(prog, "w") as f:
            f.write(prelude())
            f.write(textwrap.dedent(body))
        return self.run_argv([self.python, prog], options, preload, cwd=tmp, timeout=timeout, extra_env=extra_env,
                             stderr_file=stderr_file)


# Shared by every program: the fixture on sys.path, and race_once(), which
# forces one thread ("victim") to be inside tuner.run while the calling
# thread calls tuner.run too.
PRELUDE = r'''
import os, sys, threading
sys.path.insert(0, @FIXTURES@)
sys.path.append(@SERIALIZE_FIXTURE@)
from tgfix.slots import start_in  # threads placed in chosen occupant slots

_wait_callbacks = []
_wait_events = []
def _audit(event, args):
    if event == "tunerguard.serialize_wait":
        _wait_events.append(args)
        while _wait_callbacks:
            _wait_callbacks.pop()()
sys.addaudithook(_audit)

def my_kernel(*args, **kwargs):
    return "ok"

def race_once(tuner, serialize=False, enter=None):
    """Returns the order in which the two calls started and ended.  enter: the
    second thread's call (default tuner.run("other") from here)."""
    order = []
    entered = threading.Event()
    release = threading.Event()
    def hook(t, tag, *rest):
        order.append(tag + ":start")
        if tag == "victim":
            entered.set()
            release.wait()
        order.append(tag + ":end")
    tuner.hook = hook
    th = threading.Thread(target=tuner.run, args=("victim",), name="victim")
    th.start()
    entered.wait()
    if serialize:
        # tunerguard raises this event just before this thread blocks:
        # that is when the victim may finish.
        _wait_callbacks.append(release.set)
    if enter:
        enter()
    else:
        tuner.run("other")
    release.set()
    th.join()
    return order

def _vectorcall_of(f):
    import ctypes
    off = ctypes.c_ssize_t.from_address(id(type(f)) + 7 * ctypes.sizeof(ctypes.c_void_p)).value
    return ctypes.c_void_p.from_address(id(f) + off).value

def is_guarded(cls, name="run"):
    """A method descriptor put on the class (3.11), or the function itself
    with tunerguard's trampoline in its vectorcall slot."""
    v = cls.__dict__[name]
    if type(v).__name__ == "method_descriptor":
        return True
    return type(v) is type(my_kernel) and _vectorcall_of(v) != _vectorcall_of(my_kernel)
'''


def prelude():
    return PRELUDE.replace("@FIXTURES@", repr(FIXTURES)).replace("@SERIALIZE_FIXTURE@", repr(SERIALIZE_FIXTURE))


def expect(cond, msg, res=None):
    if not cond:
        raise Fail(msg + ("\n" + norm(res.describe()) if res is not None else ""))


def only_report(res, prefix="tg"):
    txt = res.files(prefix + ".*.txt")
    expect(len(txt) == 1, "expected exactly one %s.<pid>.txt" % prefix, res)
    with open(txt[0]) as f:
        return txt[0], f.read()


def jsonl_lines(res, prefix="tg"):
    js = res.files(prefix + ".*.jsonl")
    expect(len(js) == 1, "expected exactly one %s.<pid>.jsonl" % prefix, res)
    objs = []
    with open(js[0]) as f:
        for i, line in enumerate(f):
            try:
                objs.append(json.loads(line))
            except ValueError as e:
                raise Fail("jsonl line %d does not parse: %s: %r" % (i + 1, e, line[:200]))
    return objs


def no_files(res, what="no file"):
    extra = [f for f in os.listdir(res.tmp) if f != "prog.py"]
    expect(not extra, what + " should have been written, found %s" % extra, res)


def opts(tmp_prefix=True, **kw):
    parts = ["log_path=tg"] if tmp_prefix else []
    parts += ["%s=%s" % (k, v) for k, v in kw.items()]
    return ":".join(parts)


# --------------------------------------------------------------------------
# (a) silence where there is nothing to do

def check_silent_python(ctx):
    res = ctx.run_py('''
        import json, threading
        def work(): json.dumps({"a": [1, 2]})
        ts = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print("hello")
        sys.exit(3)
    ''')
    expect(res.rc == 3, "exit status must be the program's (3)", res)
    expect(res.out == "hello\n", "stdout unchanged", res)
    expect(res.err == "", "nothing on stderr", res)
    no_files(res)


def check_silent_exec_at_finalization(ctx):
    """exec() in a __del__ that runs in finalization's last collection, when
    sys.modules is gone, in a process that imports no target: as without
    tunerguard (the lookup of a target's package aborted the process)."""
    res = ctx.run_py('''
        class A:
            def __del__(self, exec=exec, w=os.write):
                w(1, b"del ran\\n")
                exec("x = 1", {})
        a = A()
        a.me = a
        sys.keep = sys.modules[__name__]  # __main__'s globals are cleared late
    ''')
    expect(res.rc == 0 and res.err == "" and "del ran" in res.out, "ran and exited as without tunerguard", res)


def check_silent_python_default_log_path(ctx):
    # default log_path: files would land in cwd; none must be created
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        Autotuner(my_kernel).run(1)
        print("ran")
    ''', options=None)
    expect(res.rc == 0 and res.out == "ran\n", "program unaffected", res)
    expect(res.err == "", "nothing on stderr for a single-threaded tuner call", res)
    no_files(res)


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


# --------------------------------------------------------------------------
# (b) options at start-up

PRINT_RAN = 'print("PROGRAM RAN")\n'


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
        prog = "os.makedirs(%r)\n" % d + textwrap.dedent(RACE_PROG % {"serialize": False})
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


# --------------------------------------------------------------------------
# (c) the race, in each mode

RACE_PROG = '''
    from triton.runtime.autotuner import Autotuner
    assert is_guarded(Autotuner), "Autotuner.run is not guarded"
    tuner = Autotuner(my_kernel)
    order = race_once(tuner, serialize=%(serialize)s)
    print("ORDER", ",".join(order))
    print("WAIT_EVENTS", len(_wait_events))
    print("DONE pid", os.getpid())
'''


def check_race_detect(ctx):
    res = ctx.run_py(RACE_PROG % {"serialize": False}, options=opts())
    expect(res.rc == 0, "program status kept", res)
    expect("DONE" in res.out, "program completed", res)
    expect("ORDER victim:start,other:start,other:end,victim:end" in res.out, "the overlap was forced", res)
    pid = re.search(r"DONE pid (\d+)", res.out).group(1)
    path, text = only_report(res)
    expect(os.path.basename(path) == "tg.%s.txt" % pid, "report named <log_path>.<pid>.txt", res)
    expect(text.count("WARNING: tunerguard") == 1, "one report", res)
    expect("my_kernel" in text, "the report names the kernel", res)
    expect("Autotuner.run" in text, "the report names the method", res)
    objs = jsonl_lines(res)
    expect(len(objs) == 1, "one JSON line", res)
    o = objs[0]
    expect(str(o.get("pid")) == pid, "json pid", res)
    expect("my_kernel" in json.dumps(o), "json names the kernel", res)
    expect(re.search(r"^tunerguard: 1 race reported", res.err, re.M), "at-exit summary line", res)
    expect(sum(1 for l in res.err.splitlines() if l.startswith("tunerguard:")) == 1,
           "one tunerguard line on stderr", res)


# Three threads in one marked tuner (a subclass of Triton's Autotuner,
# verbosity 0): A benchmarks (inside _bench) and waits there; B entered
# after it on a fast path (no _bench) and waits too; the main thread enters.
# Its overlap is with the benchmarking A: a race to report, whichever of A
# and B is found first.  A thread looks for its occupant slot from the one of
# its tid (tid % 8), so B is made to sit below A (start_in,
# tests/serialize/fixture/tgfix/slots.py), and the check asserts it did.
# Broken (the severity judged on the first occupant found), the second race
# is a silent low-severity overlap.
THIRD_ENTRANT_PROG = """
    from triton.runtime.autotuner import Autotuner
    parked = {"A": threading.Event(), "B": threading.Event()}
    release = threading.Event()
    class Tuner(Autotuner):
        def run(self, tag):
            self.nargs = {0: tag}
            try:
                if tag == "A":
                    return self._bench(tag)
                if tag == "B":
                    self.hook(self, tag)  # a fast path: no _bench
                return tag
            finally:
                self.nargs = None
    def hook(t, tag):
        parked[tag].set()
        release.wait(20)
    tuner = Tuner(my_kernel, hook)
    slots = {}
    def enter_parked(tag, fits):
        return start_in(tag, lambda: tuner.run(tag), fits, slots, parked[tag])
    a = enter_parked("A", lambda slot: slot > 0)
    b = enter_parked("B", lambda slot: slot < slots["A"])
    print("SLOTS", slots["A"], slots["B"])
    tuner.run("C")
    release.set()
    a.join(); b.join()
    print("DONE pid", os.getpid())
"""


def check_race_third_entrant(ctx):
    res = ctx.run_py(THIRD_ENTRANT_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    m = re.search(r"SLOTS (\d) (\d)", res.out)
    expect(m and int(m.group(2)) < int(m.group(1)), "B's slot below A's (found first)", res)
    objs = jsonl_lines(res)
    expect([o.get("severity") for o in objs] == ["high", "high"], "two high-severity races, B's and C's", res)
    expect(all(o["inside"]["name"] == "A" for o in objs), "each with A, the thread benchmarking", res)


# A thread nested in 17 tuners (one more than its record's held[] keeps),
# benchmarking in the innermost, while the main thread enters that one: a
# high-severity race.  Its slot there cannot be marked when its evidence
# appears, so the entry reads its record (TG_EV_UNTRACKED).
DEEP_PROG = """
    from triton.runtime.autotuner import Autotuner
    N = 17
    parked = threading.Event()
    release = threading.Event()
    class Tuner(Autotuner):
        def run(self, tag):
            self.nargs = {0: tag}
            try:
                if self.level + 1 < N and tag == "A":
                    return tuners[self.level + 1].run(tag)
                if tag == "A":
                    return self._bench(tag)      # innermost: benchmarking
                return tag
            finally:
                self.nargs = None
    def hook(t, tag):
        parked.set()
        release.wait(20)
    tuners = []
    for i in range(N):
        x = Tuner(my_kernel, hook); x.level = i; tuners.append(x)
    a = threading.Thread(target=lambda: tuners[0].run("A"), name="A")
    a.start()
    assert parked.wait(20)
    tuners[N - 1].run("C")
    release.set(); a.join()
    print("DONE")
"""

def check_race_deep_nesting(ctx):
    res = ctx.run_py(DEEP_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    js = res.files("tg.*.jsonl")
    objs = jsonl_lines(res) if js else []
    expect([o.get("severity") for o in objs] == ["high"], "a high-severity race with A, benchmarking at depth 17", res)

# The thread inside is 400 frames deep in the program: the record keeps its
# innermost 192 frames and its outermost 64 (the thread's start), counting
# those between; the text folds the recursion.
VERY_DEEP_PROG = """
    from triton.runtime.autotuner import Autotuner
    sys.setrecursionlimit(5000)
    tuner = Autotuner(my_kernel)
    entered = threading.Event()
    release = threading.Event()
    def hook(t, tag, *rest):
        if tag == "victim":
            entered.set()
            release.wait(20)
    tuner.hook = hook
    def descend(n):
        return descend(n - 1) if n else tuner.run("victim")
    th = threading.Thread(target=descend, args=(400,), name="victim")
    th.start()
    assert entered.wait(20)
    tuner.run("other")
    release.set()
    th.join()
    print("DONE")
"""

def check_race_very_deep_stack(ctx):
    res = ctx.run_py(VERY_DEEP_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    objs = jsonl_lines(res)
    expect(len(objs) == 1 and objs[0].get("kind") == "race", "one race", res)
    inside = objs[0]["inside"]
    py, omitted = inside["python"], inside.get("python_omitted")
    expect(len(py) == 256 and inside["python_truncated"], "256 frames kept, truncated", res)
    expect(isinstance(omitted, int) and omitted > 100, "the frames left out are counted (%r)" % omitted, res)
    expect(py[191]["func"] == "descend" and py[192]["func"] == "descend", "the gap is inside the recursion", res)
    expect(py[-1]["func"].endswith("_bootstrap") and py[-2]["func"].endswith("_bootstrap_inner"),
           "the outermost frames are the thread's start", res)
    expect(any(f["func"].endswith("run") and "autotuner" in f["file"] for f in py[:10]), "the tuner frame kept", res)
    _, text = only_report(res)
    expect("[%d frames not captured]" % omitted in text, "the text says how many were not captured", res)
    expect("[previous line repeated" in text, "the text folds the recursion", res)
    expect(len(text.splitlines()) < 80, "the text report is short (%d lines)" % len(text.splitlines()), res)

# A (found first: slot 0) ran a warmup of another tuner inside its session,
# over by now, and waits on a fast path; B benchmarks; the main thread
# enters.  A's slot keeps the evidence bit of its warmup, but its record says
# it is not tuning now: the race is with B, high severity, naming B.
WARMUP_PROG = """
    from triton.runtime.autotuner import Autotuner
    parked = {"A": threading.Event(), "B": threading.Event()}
    release = threading.Event()
    class Other(Autotuner):
        def warmup(self, *a, **k):
            return "compiled"            # real Triton: self.fn.warmup (compiles), no _bench
    other = Other(my_kernel)
    class Tuner(Autotuner):
        def run(self, tag):
            self.nargs = {0: tag}
            try:
                if tag == "A":
                    other.warmup(tag)    # a warmup session nested in this one, over by now
                    parked["A"].set(); release.wait(20)
                    return tag
                if tag == "B":
                    return self._bench(tag)
                return tag
            finally:
                self.nargs = None
    def hook(t, tag):
        parked[tag].set()
        release.wait(20)
    tuner = Tuner(my_kernel, hook)
    slots = {}
    def enter_parked(tag, fits):
        return start_in(tag, lambda: tuner.run(tag), fits, slots, parked[tag])
    a = enter_parked("A", lambda slot: slot == 0)  # found first
    b = enter_parked("B", lambda slot: True)
    print("SLOTS", slots["A"], slots["B"])
    tuner.run("C")
    release.set()
    a.join(); b.join()
    print("DONE")
"""

def check_race_after_warmup(ctx):
    res = ctx.run_py(WARMUP_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    js = res.files("tg.*.jsonl")
    objs = jsonl_lines(res) if js else []
    c = [o for o in objs if o.get("entering",{}).get("name") == "MainThread"]
    expect(c and c[0]["severity"] == "high" and c[0]["inside"]["name"] == "B",
           "C's race with B (benchmarking) reported high, naming B", res)


# A guarded call made from a hot loop: specialized by the adaptive
# interpreter (3.11+) and, where the JIT is on (3.14 and 3.15 with PYTHON_JIT=1:
# the integration/race/*-debian-jit tests), run from a compiled trace.  The guard
# must stay in that path: the main thread's calls from the hot loop's trace
# overlap a victim parked inside and are reported.  Where the JIT is on, the
# program checks that the loop did get a trace (an executor on its code).
HOT_LOOP_PROG = """
    from triton.runtime.autotuner import Autotuner
    assert is_guarded(Autotuner), "Autotuner.run is not guarded"
    tuner = Autotuner(my_kernel)
    entered, release = threading.Event(), threading.Event()
    def hook(t, tag, *rest):
        if tag == "victim":
            entered.set()
            release.wait(20)
    tuner.hook = hook
    def loop(n, last, t=tuner):
        done = 0
        for i in range(n):
            t.run(last if i == n - 1 else "warm")
            done += 1
        return done
    loop(20000, "warm")
    jit = getattr(sys, "_jit", None)
    traced = None
    if jit is not None and jit.is_enabled():
        import _opcode
        traced = False
        for off in range(0, len(loop.__code__.co_code), 2):
            try:
                traced = traced or _opcode.get_executor(loop.__code__, off) is not None
            except (ValueError, RuntimeError):
                pass
    print("TRACED", traced)
    th = threading.Thread(target=loop, args=(3, "victim"), name="victim")
    th.start()
    entered.wait(20)
    loop(3, "other")
    release.set()
    th.join()
    print("DONE pid", os.getpid())
"""


def check_race_hot_loop(ctx):
    res = ctx.run_py(HOT_LOOP_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    expect("TRACED False" not in res.out, "the JIT is on but traced no loop", res)
    expect(os.environ.get("PYTHON_JIT") != "1" or "TRACED True" in res.out,
           "PYTHON_JIT=1 (integration/race/*-debian-jit) but the JIT is not on", res)
    expect(re.search(r"^tunerguard: 1 race reported \(3 seen\)", res.err, re.M),
           "each of the main thread's three calls seen (two of them from the trace, where there is one)", res)
    objs = jsonl_lines(res)
    expect(objs and objs[0].get("entering", {}).get("name") == "MainThread"
           and objs[0].get("inside", {}).get("name") == "victim",
           "the hot loop's call racing the victim is reported", res)


# Ctrl-C whose handler runs inside tunerguard's own Python code: the
# KeyboardInterrupt is the program's, so the guarded call raises it, and a
# call interrupted before it was made is not made (a wait for it is
# abandoned).  Each program below defines make_tuner(hook) and before_call(),
# then INTERRUPT_TAIL parks a victim thread inside the tuner and calls it
# from the main thread.  Broken, the main thread gets no KeyboardInterrupt,
# or gets it only after the safety timer let the victim go.
INTERRUPT_TAIL = '''
    ran = []
    entered, release = threading.Event(), threading.Event()
    def hook(t, tag, *rest):
        ran.append(tag)
        if tag == "victim":
            entered.set()
            release.wait()
    tuner = make_tuner(hook)
    th = threading.Thread(target=tuner.run, args=("victim",), name="victim")
    th.start()
    entered.wait()
    safety = threading.Timer(20.0, release.set)
    safety.start()
    before_call()
    try:
        tuner.run("other")
        print("NOT INTERRUPTED")
    except KeyboardInterrupt:
        print("INTERRUPTED", "victim still inside" if not release.is_set() else "after the victim")
    release.set()
    safety.cancel()
    th.join()
    print("RAN", ",".join(ran))
    print("DONE pid", os.getpid())
'''

# A tuner whose kernel name (a property tunerguard reads for its reports)
# raises KeyboardInterrupt in the main thread when fire_now() says so, as
# Ctrl-C's handler raises it when it runs in there.
RAISING_NAME_TUNER = '''
    from triton.runtime.autotuner import Autotuner
    class Tuner(Autotuner):
        @property
        def base_fn(self):
            if threading.current_thread() is threading.main_thread() and fire_now():
                raise KeyboardInterrupt
            return self._base_fn
        @base_fn.setter
        def base_fn(self, fn):
            self._base_fn = fn
    def make_tuner(hook):
        return Tuner(my_kernel, hook)
'''

# detect: the race report at the call's entry reads the name.
INTERRUPT_IN_LOOKUP_PROG = '''
    fire = []
    def fire_now():
        return bool(fire) and fire.pop() == 1
    def before_call():
        fire.append(1)
''' + RAISING_NAME_TUNER + INTERRUPT_TAIL

# serialize: the handler runs in the program's audit hook on
# tunerguard.serialize_wait, just before the main thread would block.
INTERRUPT_IN_WAIT_HOOK_PROG = '''
    import signal
    from triton.runtime.autotuner import Autotuner
    fire = [1]
    def audit(event, args):
        if event == "tunerguard.serialize_wait" and fire and threading.current_thread() is threading.main_thread():
            fire.clear()
            signal.raise_signal(signal.SIGINT)  # its handler runs in this hook
    sys.addaudithook(audit)
    def make_tuner(hook):
        return Autotuner(my_kernel, hook)
    def before_call():
        pass
''' + INTERRUPT_TAIL

# serialize, wait_timeout=1: in the wait_timeout report, which reads the name
# once the wait is under way (armed after the reads before the wait).
INTERRUPT_IN_WAIT_REPORT_PROG = '''
    import time
    arm = []
    def fire_now():
        return bool(arm) and time.monotonic() > arm[0] and arm.pop() > 0
    def audit(event, args):
        if event == "tunerguard.serialize_wait" and threading.current_thread() is threading.main_thread():
            arm.append(time.monotonic() + 0.3)  # before the 1 s report
    sys.addaudithook(audit)
    def before_call():
        pass
''' + RAISING_NAME_TUNER + INTERRUPT_TAIL


def check_interrupted(ctx, prog, **options):
    res = ctx.run_py(prog, options=opts(**options))
    out = res.out.splitlines()
    expect(res.rc == 0 and "DONE" in res.out, "the program ran", res)
    expect("INTERRUPTED victim still inside" in out, "KeyboardInterrupt from the call, the victim still inside", res)
    expect("RAN victim" in out, "the interrupted call was not made", res)
    return res


def check_race_interrupt_in_lookup(ctx):
    res = check_interrupted(ctx, INTERRUPT_IN_LOOKUP_PROG)
    path, text = only_report(res)
    expect("my_kernel" in text, "the race reported, the kernel named", res)


def check_race_interrupt_in_wait_hook(ctx):
    check_interrupted(ctx, INTERRUPT_IN_WAIT_HOOK_PROG, mode="serialize")


def check_race_interrupt_in_wait_report(ctx):
    check_interrupted(ctx, INTERRUPT_IN_WAIT_REPORT_PROG, mode="serialize", wait_timeout=1)


def check_race_serialize(ctx):
    res = ctx.run_py(RACE_PROG % {"serialize": True}, options=opts(mode="serialize"))
    expect(res.rc == 0, "no exception, status kept", res)
    expect("DONE" in res.out and "Traceback" not in res.err, "program completed", res)
    expect("WAIT_EVENTS 1" in res.out, "tunerguard.serialize_wait raised once", res)
    expect("ORDER victim:start,victim:end,other:start,other:end" in res.out,
           "the second call ran only after the first ended", res)
    expect(re.search(r"^tunerguard: .*serialized", res.err, re.M), "stderr mentions serialized", res)
    expect("my_kernel" in res.err, "the summary names the contended kernel", res)
    # the prevented race says so in its headline and SUMMARY line, not 100 lines later
    _, text = only_report(res)
    expect(re.search(r"^WARNING: tunerguard: race prevented \(serialize\): thread entered a tuner", text, re.M)
           and re.search(r"^SUMMARY: tunerguard: tuner race prevented \(serialize\) on 'my_kernel'", text, re.M)
           and "What it does: nothing: serialize mode made the second thread wait" in text,
           "the report's headline, SUMMARY and summary say the race was prevented", res)


# Two races on one tuner: the entering thread calls from one line both
# times, the thread inside from line A, then from line B (or A again, the
# control).  The report's de-duplication key holds both threads' call sites:
# another inside site is another race, written; the same two sites again
# are its repeat, counted.
TWO_INSIDE_SITES_PROG = """
    from triton.runtime.autotuner import Autotuner
    tuner = Autotuner(my_kernel)
    def race_with(victim_call):
        entered, release = threading.Event(), threading.Event()
        def hook(t, tag, *rest):
            if tag == "victim":
                entered.set()
                release.wait()
        tuner.hook = hook
        th = threading.Thread(target=victim_call, name="victim")
        th.start()
        entered.wait()
        enter()
        release.set()
        th.join()
    def enter():
        tuner.run("other")  # the entering call site, both races
    def inside_a():
        tuner.run("victim")  # inside call site A
    def inside_b():
        tuner.run("victim")  # inside call site B
    race_with(inside_a)
    race_with(inside_b if os.environ["SECOND"] == "b" else inside_a)
    print("DONE")
"""


def check_two_inside_sites_two_reports(ctx):
    """Same entering call site, another inside call site: two reports."""
    for second, want_written in (("b", 2), ("a", 1)):
        res = ctx.run_py(TWO_INSIDE_SITES_PROG, options=opts(), extra_env={"SECOND": second})
        expect(res.rc == 0 and "DONE" in res.out, "ran", res)
        _, text = only_report(res)
        what = "inside sites A, B" if second == "b" else "inside site A twice (the control)"
        written = text.count("WARNING: tunerguard: thread entered a tuner another thread is inside")
        expect(written == want_written, "%s: %d race reports, %d written" % (what, want_written, written), res)
        expect(re.search(r"^tunerguard: %d races? reported \(2 seen\)" % want_written, res.err, re.M),
               "%s: the exit line says %d reported, 2 seen" % (what, want_written), res)


def check_race_off(ctx):
    prog = RACE_PROG.replace("assert is_guarded(Autotuner)", "assert not is_guarded(Autotuner)")
    res = ctx.run_py(prog % {"serialize": False}, options=opts(mode="off"))
    expect(res.rc == 0 and "DONE" in res.out, "program unaffected", res)
    expect("ORDER victim:start,other:start,other:end,victim:end" in res.out, "the overlap happened", res)
    expect(res.err == "", "nothing on stderr", res)
    no_files(res)


def check_race_log_stderr(ctx):
    res = ctx.run_py(RACE_PROG % {"serialize": False}, options="log_path=stderr")
    expect(res.rc == 0 and "DONE" in res.out, "program unaffected", res)
    expect(res.err.count("WARNING: tunerguard") == 1 and "my_kernel" in res.err, "report on stderr", res)
    no_files(res, "no report file (log_path=stderr)")


# --------------------------------------------------------------------------
# (d) import order and subclasses

def check_import_lazy_in_thread(ctx):
    res = ctx.run_py('''
        box = {}
        def load():
            import triton.runtime.autotuner as A
            box["A"] = A
        t = threading.Thread(target=load); t.start(); t.join()
        Autotuner = box["A"].Autotuner
        assert is_guarded(Autotuner), "not guarded after a lazy import in a thread"
        race_once(Autotuner(my_kernel))
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1 and "my_kernel" in text, "race reported", res)


def check_import_importlib(ctx):
    res = ctx.run_py('''
        import importlib
        A = importlib.import_module("triton.runtime.autotuner")
        assert is_guarded(A.Autotuner)
        race_once(A.Autotuner(my_kernel))
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1, "race reported", res)


def check_import_module_run_again(ctx):
    """The target module runs again (importlib.reload; deleted from
    sys.modules and imported anew): its new Autotuner class, a subclass of
    it defined after, and the class of the first import are all guarded, and
    a race on the new class is reported."""
    for how in ("importlib.reload(A)", "(sys.modules.pop('triton.runtime.autotuner'), "
                "importlib.import_module('triton.runtime.autotuner'))[1]"):
        res = ctx.run_py('''
            import importlib, sys
            A = importlib.import_module("triton.runtime.autotuner")
            Old = A.Autotuner
            B = %s
            assert B.Autotuner is not Old, "the module did not run again"
            class Sub(B.Autotuner):
                def run(self, *a, **k):
                    return super().run(*a, **k)
            print("GUARDED", is_guarded(Old), is_guarded(B.Autotuner), is_guarded(Sub))
            race_once(Sub(my_kernel))
            print("DONE")
        ''' % how, options=opts())
        expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
        expect("GUARDED True True True" in res.out, "old class, new class and its subclass guarded", res)
        _, text = only_report(res)
        expect(text.count("WARNING: tunerguard") == 1, "the race on the new class reported", res)


def check_import_namespace_package(ctx):
    """The target module in namespace packages (no __init__.py), imported
    through importlib.import_module: no "import" event, no package code
    runs before the target's own, so the finder comes too late for it; it
    is guarded at the first audit event of any kind after it has run (here
    an open()), and the race after that is reported."""
    res = ctx.run_py('''
        import importlib, shutil
        src = os.path.join(sys.path.pop(0), "triton", "runtime", "autotuner.py")  # the fixture: a regular package
        os.makedirs("ns/triton/runtime")
        shutil.copy(src, "ns/triton/runtime/autotuner.py")
        sys.path.insert(0, os.path.abspath("ns"))
        A = importlib.import_module("triton.runtime.autotuner")
        print("NAMESPACE", type(sys.modules["triton"].__spec__.loader).__name__)
        open(os.devnull).close()  # an audit event ("open")
        race_once(A.Autotuner(my_kernel))
        print("GUARDED", is_guarded(A.Autotuner))
    ''', options=opts())
    expect(res.rc == 0 and "GUARDED True" in res.out and "NamespaceLoader" in res.out, "guarded", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1, "the race reported", res)


def check_import_finder_before_ours(ctx):
    """A finder of the program's put before ours that loads the target
    module itself (an import hook), and sys.meta_path put back from a copy
    taken before ours went in (a test harness): the "import" event
    announced the module, so it is guarded at the first audit event after
    it has run, and its race is reported."""
    for how in ("front", "snapshot"):
        res = ctx.run_py('''
            import importlib.abc, importlib.machinery
            how = %r
            snapshot = list(sys.meta_path)
            import triton  # the package: our finder goes in
            if how == "front":
                class Hook(importlib.abc.MetaPathFinder):
                    def find_spec(self, name, path, target=None):
                        if name.startswith("triton."):
                            return importlib.machinery.PathFinder.find_spec(name, path)
                sys.meta_path.insert(0, Hook())
            else:
                sys.meta_path[:] = snapshot
            import triton.runtime.autotuner as A
            open(os.devnull).close()  # an audit event ("open")
            race_once(A.Autotuner(my_kernel))
            print("GUARDED", is_guarded(A.Autotuner))
        ''' % how, options=opts())
        expect(res.rc == 0 and "GUARDED True" in res.out, "%s: guarded" % how, res)
        _, text = only_report(res)
        expect(text.count("WARNING: tunerguard") == 1, "%s: the race reported" % how, res)


def check_import_leaves_loader_as_it_was(ctx):
    """The finder wraps the target module's loader.exec_module for that one
    import and puts it back as the module starts to run: nothing of ours
    stays on the loader (a shared zipimporter, a class used as a loader
    with its classmethod, would keep it for every later import)."""
    res = ctx.run_py('''
        import triton.runtime.autotuner as A
        loader = A.__loader__
        print("OWN", "exec_module" in vars(loader))
        print("GUARDED", is_guarded(A.Autotuner))
    ''', options=opts())
    expect(res.rc == 0 and "OWN False" in res.out and "GUARDED True" in res.out,
           "the loader as it was, the module guarded", res)


SUB_PROG = '''
    from triton.runtime.autotuner import Autotuner
    class CachedAutotuner(Autotuner):
        def run(self, *args, **kwargs):
            return super().run(*args, **kwargs)
    assert is_guarded(CachedAutotuner), "subclass override not guarded"
    tuner = CachedAutotuner(my_kernel)
'''


def check_subclass_race(ctx):
    res = ctx.run_py(SUB_PROG + '''
    race_once(tuner)
    print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1, "one race reported", res)
    expect("CachedAutotuner.run" in text, "the report's method is the subclass's run", res)
    o = jsonl_lines(res)[0]
    expect("CachedAutotuner.run" in json.dumps(o), "json method", res)


def check_subclass_nested_single_thread(ctx):
    res = ctx.run_py(SUB_PROG + '''
    for i in range(3):
        tuner.run(i)
    tuner.warmup(1)
    print("DONE")
    ''', options=opts(verbosity=1))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect(res.err == "", "run -> super().run() on one thread is not a race", res)
    no_files(res)


# --------------------------------------------------------------------------
# (d') a tuner subclass whose run is no plain function of its own: what a
# call runs is guarded (a mixin's function, a partialmethod's function), or
# one line names the class whose run is left unguarded and why (a property,
# another descriptor).  Each run is a run of its own, which never calls
# Autotuner.run: guarded only where its own entry is.

SHAPE_PRELUDE = """
    import functools, types
    from triton.runtime.autotuner import Autotuner
    def own_run(self, *args, **kwargs):
        self.nargs = dict(enumerate(args))  # kept on the shared tuner, as Triton's run does
        try:
            return self._bench(*args)
        finally:
            self.nargs = None
"""

SHAPES = {
    "partialmethod": """
    class Tuner(Autotuner):
        run = functools.partialmethod(own_run, mode="fast")
    """,
    "mixin": """
    class RunMixin:  # no tuner: its other users' calls are no sessions
        def run(self, *args, **kwargs):
            return own_run(self, *args, **kwargs)
    class Tuner(RunMixin, Autotuner):
        pass
    class NotATuner(RunMixin):
        def _bench(self, *args):
            self.hook(self, *args)
    race_once(NotATuner(), serialize=%(serialize)s)  # overlapping, but no tuner: no report, no wait
    print("NOT_A_TUNER_WAITS", len(_wait_events))
    """,
    "property": """
    class Tuner(Autotuner):
        @property
        def run(self):
            return types.MethodType(own_run, self)
    class MoreTuners(Tuner):  # inherits the property: said for Tuner, once
        pass
    """,
    "descriptor": """
    class Bound:
        def __get__(self, inst, owner=None):
            return self if inst is None else functools.partial(own_run, inst)
    class Tuner(Autotuner):
        run = Bound()
    """,
    "instance": """
    class Tuner(Autotuner):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.run = types.MethodType(own_run, self)  # shadows the class's guarded run
    """,
}

SHAPE_RACE = """
    tuner = Tuner(my_kernel)
    order = race_once(tuner, serialize=%(serialize)s)
    print("ORDER", ",".join(order))
    print("WAIT_EVENTS", len(_wait_events))
    print("DONE")
"""


def run_shape(ctx, shape, mode):
    prog = (SHAPE_PRELUDE + SHAPES[shape] + SHAPE_RACE) % {"serialize": mode == "serialize"}
    return ctx.run_py(prog, options=opts(mode=mode))


# run set on a tuner instance, found at its first tuning call: the function
# the bound method calls is guarded from then on (in its vectorcall slot), or,
# on 3.11 (no such slot), said to run unguarded.
INSTANCE_LINE = {False: "a __main__.Tuner instance has run set on itself (a method of own_run), which shadows "
                        "Tuner.run: own_run is guarded from now on",
                 True: "a __main__.Tuner instance has run set on itself (a method), which shadows Tuner.run: "
                       "calls of it run unguarded"}


def interpreter_minor(ctx):
    if not hasattr(ctx, "minor"):
        out = subprocess.run([ctx.python, "-c", "import sys; print(sys.version_info[1])"], capture_output=True,
                             text=True, env=ctx.env(preload=False))
        ctx.minor = int(out.stdout)
    return ctx.minor


def check_run_shape_instance_guarded(ctx):
    """run set on the instance, the tuner's first call made alone: the race
    of later calls is reported (detect) and prevented (serialize); 3.11: the
    line says they run unguarded, and nothing is reported."""
    unguarded = interpreter_minor(ctx) == 11
    for mode, kind in (("detect", "method"), ("serialize", "method"), ("detect", "partial")):
        shape = SHAPES["instance"]
        if kind == "partial":
            shape = shape.replace("types.MethodType(own_run, self)", "functools.partial(own_run, self)")
        prog = (SHAPE_PRELUDE + shape + """
    Tuner(my_kernel).run("alone")  # its first tuning: found, guarded from here
    """ + SHAPE_RACE) % {"serialize": mode == "serialize"}
        res = ctx.run_py(prog, options=opts(mode=mode))
        expect(res.rc == 0 and "DONE" in res.out, "%s: program ran" % mode, res)
        lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
        want = INSTANCE_LINE[unguarded].replace("(a method", "(a " + kind)
        expect(lines and want in lines[0], "%s, %s: the line" % (mode, kind), res)
        if unguarded:
            expect("ORDER victim:start,other:start,other:end,victim:end" in res.out and not res.files("tg.*"),
                   "3.11 %s: unguarded, nothing reported" % mode, res)
        elif mode == "detect":
            _, text = only_report(res)
            expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1 and "Tuner.run" in text,
                   "detect: the later race reported", res)
        else:
            expect("ORDER victim:start,victim:end,other:start,other:end" in res.out
                   and re.search(r"^tunerguard: .*; 1 call serialized", res.err, re.M),
                   "serialize: the later race prevented", res)


def check_run_shape_guarded(ctx):
    """A mixin's run, and a partialmethod's function: a race through them is
    reported (detect) and prevented (serialize); the mixin's calls on an
    instance of another class are no session."""
    for shape, method in (("mixin", "RunMixin.run"), ("partialmethod", "Tuner.run")):
        res = run_shape(ctx, shape, "detect")
        expect(res.rc == 0 and "DONE" in res.out, "%s: program ran" % shape, res)
        expect("ORDER victim:start,other:start,other:end,victim:end" in res.out, "%s: the overlap was forced" % shape,
               res)
        _, text = only_report(res)
        expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1 and method in text,
               "%s: one race reported, in %s" % (shape, method), res)
        res = run_shape(ctx, shape, "serialize")
        expect(res.rc == 0 and "DONE" in res.out, "%s serialize: program ran" % shape, res)
        # (a wait for the turn that passes its bound on a loaded machine
        # is followed by one for the tuner: two events, one call)
        expect("ORDER victim:start,victim:end,other:start,other:end" in res.out
               and re.search(r"^WAIT_EVENTS [12]$", res.out, re.M)
               and re.search(r"^tunerguard: .*; 1 call serialized", res.err, re.M),
               "%s serialize: the second call waited until the first ended" % shape, res)
        expect(shape != "mixin" or "NOT_A_TUNER_WAITS 0" in res.out,
               "mixin serialize: no wait in the mixin's other user's overlap", res)


def check_run_shape_said(ctx):
    """A property, another descriptor: what a call runs is decided at each
    access; run set on the instance: nothing announces it.  One line names
    the class and says its run is unguarded (the instance's when a tuning
    method runs outside any guarded call)."""
    wants = {"property": "__main__.Tuner.run is a property, not a function",
             "descriptor": "__main__.Tuner.run is a Bound, not a function",
             "instance": INSTANCE_LINE[interpreter_minor(ctx) == 11]}
    for shape, want in wants.items():
        res = run_shape(ctx, shape, "detect")
        expect(res.rc == 0 and "DONE" in res.out, "%s: program ran" % shape, res)
        lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
        expect(len(lines) == 1 and want in lines[0] and "unguarded" in lines[0],
               "%s: one line names the class and why its run is unguarded" % shape, res)
    # run set on the instance, called from inside another tuner's guarded
    # call (a kernel tuned inside another's benchmark): said as well.
    res = ctx.run_py(SHAPE_PRELUDE + SHAPES["instance"] + """
    inner = Tuner(my_kernel)
    outer = Autotuner(lambda *args: inner.run(*args))
    print(outer.run("x"))
    """, options=opts())
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "ok" in res.out and len(lines) == 1 and wants["instance"] in lines[0],
           "instance, inside another tuner's call: one line", res)


# --------------------------------------------------------------------------
# (e) user code replaces a guarded method

def check_replaced_method(ctx):
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        orig = Autotuner.run
        def locked(self, *a, **k):
            return orig(self, *a, **k)
        Autotuner.run = locked
        tuner = Autotuner(my_kernel)
        tuner.run("first")
        print("GUARDED_AFTER", is_guarded(Autotuner))
        race_once(tuner)
        print("DONE")
    ''', options=opts(verbosity=1))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect(re.search(r"^tunerguard: Autotuner\.run was replaced.*locked.*prog\.py:\d+.*guarded", res.err, re.M),
           "stderr says it was replaced (by locked at prog.py:N) and guarded", res)
    expect("GUARDED_AFTER True" in res.out, "the replacement is guarded", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: guarded method replaced") == 1
           and re.search(r"Autotuner\.run = locked at .*prog\.py:\d+", text),
           "verbosity=1: a method_replaced report names the replacement and where it is defined", res)
    expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1,
           "the race through the replacement is reported", res)
    kinds = [o["kind"] for o in jsonl_lines(res)]
    expect(kinds == ["method_replaced", "race"], "JSON Lines: method_replaced, then race (got %s)" % kinds, res)


REPLACED_COPY_PROG = '''
    from triton.runtime.autotuner import Autotuner
    def my_run(self, *args, **kwargs):
        """The program's own copy of run (GPTQModel's nogil patcher): nargs kept on self."""
        self.nargs = dict(enumerate(args))
        self.counter = 0  # reset_to_zero
        try:
            self._bench(*args)
            self.counter += 1
            return len(self.nargs), self.counter
        finally:
            self.nargs = None
    Autotuner.run = my_run  # before the first call
    tuner = Autotuner(my_kernel)
    errors, results = [], []
    def call(tag):
        try:
            results.append(tuner.run(tag))
        except TypeError as e:
            errors.append(e)
    entered, release = threading.Event(), threading.Event()
    def hook(t, tag, *rest):
        if tag == "victim":  # inside the tuning, until another thread comes in
            entered.set()
            release.wait()
    tuner.hook = hook
    victim = threading.Thread(target=call, args=("victim",))
    victim.start()
    entered.wait()
    _wait_callbacks.append(release.set)  # serialize: the first thread to wait lets it go on
    others = [threading.Thread(target=call, args=("other%d" % i,)) for i in range(5)]
    for th in others:
        th.start()
    for th in others:
        th.join()
    release.set()
    victim.join()
    print("TYPEERRORS", len(errors), "RESULTS", sorted(set(results)), len(results))
    print("DONE")
'''


def check_replaced_copy_before_first_call(ctx):
    """The program puts its own copy of Autotuner.run on the class before the
    first call (one that never calls the original): guarded from its first
    call.  detect: the race is reported, through my_run; serialize: no
    TypeError, every call saw its own nargs and counter."""
    res = ctx.run_py(REPLACED_COPY_PROG, options=opts(verbosity=1))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect(re.search(r"^tunerguard: Autotuner\.run was replaced by my_run defined at .*prog\.py:\d+", res.err, re.M),
           "the assignment itself is noticed", res)
    _, text = only_report(res)
    expect("WARNING: tunerguard: thread entered a tuner" in text and "my_run" in text,
           "detect: the race through the replacement is reported, naming it", res)
    res = ctx.run_py(REPLACED_COPY_PROG, options=opts(mode="serialize"))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect("TYPEERRORS 0 RESULTS [(1, 1)] 6" in res.out, "serialize: no TypeError, counters right", res)


def check_setattr_paths(ctx):
    """Class attribute assignment behaves as without tunerguard on every path
    once replacements are watched (type's __setattr__ hooked): a metaclass's
    super().__setattr__, an Enum, an ABC, type.__setattr__ called directly,
    object.__setattr__ refused on a class; and a replacement made through a
    metaclass that defines __setattr__ is guarded."""
    res = ctx.run_py('''
        import abc, enum
        import struct
        from triton.runtime.autotuner import Autotuner
        class M(type):
            def __setattr__(cls, n, v):
                super().__setattr__(n, v)
        class C(metaclass=M):
            pass
        C.x = 1
        class E(enum.Enum):
            A = 1
        E.extra = 2
        class A(abc.ABC):
            pass
        A.y = 3
        type.__setattr__(A, "z", 4)
        class P:
            pass
        type.__setattr__(P, "w", 5)
        try:
            object.__setattr__(P, "v", 6)
            print("OBJECT allowed")
        except TypeError as e:
            print("OBJECT", e)
        print("VALUES", C.x, E.extra, A.y, A.z, P.w)
        class MA(type):
            def __setattr__(cls, n, v):
                super().__setattr__(n, v)
        class Sub(Autotuner, metaclass=MA):
            pass
        def mine(self, *a, **k):
            return "mine"
        Sub.run = mine
        print("SUB", Sub(my_kernel).run(1), is_guarded(Sub))
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out and "VALUES 1 2 3 4 5" in res.out, "every assignment made", res)
    expect("OBJECT can't apply this __setattr__ to type object" in res.out, "object.__setattr__ refused as always", res)
    expect("SUB mine True" in res.out, "a replacement through a metaclass's __setattr__ is guarded", res)


def check_replaced_method_late_alternating(ctx):
    """A replacement made after the guards are warm is found whatever the
    pattern of calls: a thread alternating between two guards (a check every
    64th call of the thread, counted for all guards together, never checked
    one of them)."""
    for off in (0, 1):
        res = ctx.run_py('''
            from triton.runtime.autotuner import Autotuner
            class Sub(Autotuner):
                def run(self, *a, **k):
                    return super().run(*a, **k)
            a, s = Autotuner(my_kernel), Sub(my_kernel)
            for i in range(1100):
                a.run(i); s.run(i)
            orig = Autotuner.run
            def locked(self, *x, **k):
                return orig(self, *x, **k)
            Autotuner.run = locked
            for i in range(%d):
                s.run(0)
            for i in range(3000):  # a check is one call in 64 at random: missed in 3000 with p < 1e-20
                a.run(i); s.run(i)
            print("DONE")
        ''' % off, options=opts(verbosity=1))
        expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
        expect(re.search(r"^tunerguard: Autotuner\.run was replaced", res.err, re.M),
               "offset %d: the late replacement is found" % off, res)


def check_replaced_method_silent(ctx):
    """verbosity 0: the replacement is guarded without a word or a file."""
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        orig = Autotuner.run
        def locked(self, *a, **k):
            return orig(self, *a, **k)
        Autotuner.run = locked
        Autotuner(my_kernel).run("first")
        print("GUARDED_AFTER", is_guarded(Autotuner))
    ''', options=opts())
    expect(res.rc == 0 and "GUARDED_AFTER True" in res.out and res.err == "", "guarded, silent", res)
    no_files(res)


def check_replaced_method_patch_restore_loop(ctx):
    """A program that patches the method with a new function and restores it,
    300 times (a closure made per step): every replacement is guarded, a
    freed one's slot taken again (on 3.11, where descriptor guards keep their
    slots, until the table of guards is full, then one line says so and the
    later ones run as they are); every call runs its own replacement, a bound
    method taken from the first one (whose slot stays taken) still runs the
    first one, and a race through the last (a wrapper calling the original)
    is still reported by the original's guard."""
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        orig = Autotuner.run
        tuner = Autotuner(my_kernel)
        guarded, wrong, held = 0, [], None
        for i in range(300):
            def patched(self, *a, i=i, **k):  # a new function each time
                orig(self, *a, **k)
                return ("patched", i)
            Autotuner.run = patched
            if tuner.run(i) != ("patched", i):
                wrong.append(i)
            guarded += is_guarded(Autotuner)
            if i == 0:
                held = tuner.run  # a bound method of the first replacement's guard
            Autotuner.run = orig
        print("GUARDED", guarded, "WRONG", wrong, "HELD", held(0))
        print("MINOR", sys.version_info[1])
        def last(self, *a, **k):
            return orig(self, *a, **k)
        Autotuner.run = last
        race_once(tuner)
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out and "WRONG [] HELD ('patched', 0)" in res.out,
           "every call ran its own replacement, the held bound method the first", res)
    m = re.search(r"GUARDED (\d+)", res.out)
    others = [ln for ln in res.err.splitlines() if not re.match(r"tunerguard: \d+ races? reported", ln)]
    if "MINOR 11" in res.out:
        expect(m and 200 <= int(m.group(1)) < 256, "replacements guarded until the table was full", res)
        expect(len(re.findall(r"^tunerguard: more than 256 guarded methods; run and later ones are not guarded$",
                              res.err, re.M)) == 1 and len(others) == 1,
               "one line when the table filled, nothing more (and the exit line)", res)
    else:
        expect(m and int(m.group(1)) == 300 and not others, "every replacement guarded, nothing said", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1,
           "the race through the last replacement is reported by the original's guard", res)


def check_signature(ctx):
    """inspect.signature() of a guarded method works (it raised ValueError);
    where the guard is in the vectorcall slot it is the function's own."""
    res = ctx.run_py('''
        import inspect
        from triton.runtime.autotuner import Autotuner
        print("GUARDED", is_guarded(Autotuner))
        print("SIG", inspect.signature(Autotuner.run))
        print("BOUND", inspect.signature(Autotuner(my_kernel).run))
    ''', options=opts())
    expect(res.rc == 0 and "GUARDED True" in res.out, "guarded", res)
    expect(("SIG (self, /, *args, **kwargs)" in res.out or "SIG (self, *args, **kwargs)" in res.out)
           and "BOUND (*args, **kwargs)" in res.out, "a signature that passes everything through", res)


def check_guard_identity(ctx):
    """A guarded method is the program's own function to introspection
    (getsource, __code__, __module__, __globals__, a bound method's __func__,
    isfunction, the signature, a class that borrows it, MagicMock(spec=)),
    and stays guarded; its class's namespace is as without tunerguard (the
    subclass watch puts nothing there).  3.11 (a method descriptor there):
    only guarded, and the namespace."""
    res = ctx.run_py('''
        import atexit, inspect
        from unittest import mock
        n_atexit = atexit._ncallbacks()
        from triton.runtime.autotuner import Autotuner
        import triton.runtime.autotuner as mod
        print("GUARDED", is_guarded(Autotuner), is_guarded(Autotuner, "warmup"))
        print("MINOR", sys.version_info[1])
        def probe(name, fn):
            try:
                print(name, fn())
            except Exception as e:
                print(name, "ERROR", type(e).__name__, e)
        probe("SRC", lambda: inspect.getsource(Autotuner.run).lstrip().startswith("def run(self, *args, **kwargs):"))
        probe("CODE", lambda: Autotuner.run.__code__.co_name == "run" and Autotuner.run.__module__ == mod.__name__
              and Autotuner.run.__globals__ is vars(mod))
        probe("ISFUNC", lambda: inspect.isfunction(Autotuner.run))
        probe("FUNC", lambda: Autotuner(my_kernel).run.__func__ is Autotuner.run)
        probe("SIG", lambda: str(inspect.signature(Autotuner.run)))
        class Duck:
            run = Autotuner.run
            hook = None
            def _bench(self, *a, **k):
                return "duck"
        probe("DUCK", lambda: Duck().run(1))
        probe("MOCK", lambda: type(mock.MagicMock(spec=Autotuner).run(1)).__name__)
        probe("VARS", lambda: "__init_subclass__" not in vars(Autotuner) and
              inspect.getattr_static(Autotuner, "__init_subclass__") is vars(object)["__init_subclass__"])
        class Later(Autotuner):
            def run(self, *a, **k):
                return super().run(*a, **k)
        probe("LATER", lambda: is_guarded(Later))
        race_once(Autotuner(my_kernel))
        print("ATEXIT", atexit._ncallbacks() - n_atexit)
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out and "GUARDED True True" in res.out, "program ran, guarded", res)
    expect("ATEXIT 0" in res.out, "no atexit function of tunerguard's", res)
    expect("VARS True" in res.out and "LATER True" in res.out,
           "the class's namespace as without tunerguard, and a subclass made later guarded", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1, "the race is reported", res)
    if "MINOR 11" in res.out:
        return
    for want in ("SRC True", "CODE True", "ISFUNC True", "FUNC True", "SIG (self, *args, **kwargs)",
                 "DUCK ", "MOCK MagicMock"):
        expect(re.search("^" + re.escape(want), res.out, re.M) and "DUCK ERROR" not in res.out,
               "introspection as without tunerguard: %s" % want, res)


def check_guard_lifetime(ctx):
    """A guard keeps neither its class nor its function alive, and a function
    that outlives its class still runs, guarded, without its class.  On 3.11
    (a method descriptor put on the class, which alone holds it): the class
    is freed, and a bound method that outlives its class still runs."""
    res = ctx.run_py('''
        import gc, weakref
        with open("lifemod.py", "w") as f:
            f.write("class Base:\\n    def run(self, x):\\n        return x\\n")
        sys.path.insert(0, ".")
        import lifemod
        def make():
            class Sub(lifemod.Base):
                def run(self, x):
                    return x + 1
            return Sub
        Sub = make()
        print("SUB_GUARDED", is_guarded(Sub), Sub().run(1))
        print("MINOR", sys.version_info[1])
        if sys.version_info[:2] == (3, 11):  # a method descriptor, no weak reference to it
            wc = weakref.ref(Sub)
            del Sub
            gc.collect()
            print("CLASS_GONE", wc() is None)
            Sub = make()
            bound, wc = Sub().run, weakref.ref(Sub)
            del Sub
            gc.collect()
            print("BOUND", wc() is None, bound(2))
            del bound
            gc.collect()
            print("BOUND_GONE", wc() is None)
            print("DONE")
            sys.exit(0)
        wc, wf = weakref.ref(Sub), weakref.ref(Sub.__dict__["run"])
        del Sub
        gc.collect()
        print("CLASS_GONE", wc() is None, "FUNCTION_GONE", wf() is None)
        Sub = make()
        kept = Sub.__dict__["run"]
        wc = weakref.ref(Sub)
        del Sub
        gc.collect()
        print("KEPT", wc() is None, kept(object(), 2))
        print("DONE")
    ''', options=opts(targets="lifemod:Base.run"))
    expect(res.rc == 0 and "DONE" in res.out and "SUB_GUARDED True 2" in res.out, "program ran, Sub guarded", res)
    if "MINOR 11" not in res.out:
        expect("CLASS_GONE True FUNCTION_GONE True" in res.out, "the class and its function were freed", res)
        expect("KEPT True 3" in res.out, "a function that outlived its class ran", res)
    else:
        expect("CLASS_GONE True" in res.out, "the class was freed (3.11: its guard's descriptor with it)", res)
        expect("BOUND False 3" in res.out and "BOUND_GONE True" in res.out,
               "a bound method kept the class, ran guarded, and let it go", res)


def check_replaced_same_function_again(ctx):
    """The same patch made and undone 300 times (one function, a fixture
    per test): each assignment is guarded, and on 3.11, where a guard is a
    descriptor, the function put back reuses its guard, so the table of
    guards never fills (one line would say so)."""
    res = ctx.run_py('''
        with open("patchmod.py", "w") as f:
            f.write("class T:\\n    def run(self, x):\\n        return x\\n")
        sys.path.insert(0, ".")
        import patchmod
        T = patchmod.T
        orig = T.__dict__["run"]
        def patched(self, x):
            return orig(self, x) * 2
        for i in range(300):
            T.run = patched
            assert T().run(1) == 2
            T.run = orig
        T.run = patched
        print("GUARDED", is_guarded(T), T().run(2))
        print("DONE")
    ''', options=opts(targets="patchmod:T.run"))
    expect(res.rc == 0 and "GUARDED True 4" in res.out and "DONE" in res.out, "patched 300 times: still guarded", res)
    expect("guarded methods" not in res.err, "the guard table did not fill", res)


def check_new_functions_take_freed_slots(ctx):
    """300 tests each patching in a new function (mock.patch.object(T, "run",
    new=...)), each freed when its patch is undone: where a guard is the
    function's vectorcall (not 3.11), a freed function's guard slot is taken
    again, so the table never fills and the last patch is guarded.  On 3.11
    (descriptor guards keep their slots) the table fills: one line."""
    res = ctx.run_py('''
        from unittest import mock
        with open("patchmod2.py", "w") as f:
            f.write("class T:\\n    def run(self, x):\\n        return x\\n")
        sys.path.insert(0, ".")
        import patchmod2
        T = patchmod2.T
        for i in range(300):
            with mock.patch.object(T, "run", new=lambda self, x, i=i: x + i):
                assert T().run(1) == 1 + i
                guarded = is_guarded(T)
        print("LAST_GUARDED", guarded)
        for i in range(300):  # each assignment frees the function before it: its slot is the one free
            T.run = lambda self, x, i=i: x - i
            assert T().run(1) == 1 - i
        print("PLAIN_GUARDED", is_guarded(T))
        print("MINOR", sys.version_info[1])
        print("DONE")
    ''', options=opts(targets="patchmod2:T.run", verbosity=2))
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    full = res.err.count("guarded methods; ")
    if "MINOR 11" in res.out:
        expect(full == 1, "3.11: the full table said once", res)
    else:
        expect(full == 0 and "LAST_GUARDED True" in res.out and "PLAIN_GUARDED True" in res.out,
               "freed functions' slots taken again: the last guarded", res)
        named = re.findall(r"^tunerguard: guarding (\S+) \(replaced by user code\)$", res.err, re.M)
        expect(len(named) >= 600 and set(named) == {"T.run"},
               "every replacement guarded under its own name: %s" % sorted(set(named)), res)


def check_descriptor_guard_keeps_class_semantics(ctx):
    """What a class does stays as without tunerguard on every version, also
    where a guard is a method descriptor (3.11): an abstract run stays
    abstract, a metaclass's own __setattr__ never sees tunerguard's
    assignment (one that wraps what it is given would wrap the guard again
    at every replacement check), and an override keeps its docstring."""
    res = ctx.run_py('''
        import abc
        with open("semmod.py", "w") as f:
            f.write("class Base:\\n    def run(self, x):\\n        return x\\n")
        sys.path.insert(0, ".")
        import semmod
        class Abstract(semmod.Base, abc.ABC):
            @abc.abstractmethod
            def run(self, x):
                """An abstract run."""
        class Concrete(Abstract):
            def run(self, x):
                """Runs x."""
                return x + 1
        try:
            Abstract()
            print("ABSTRACT instantiated")
        except TypeError:
            print("ABSTRACT refused")
        print("ABSTRACTS", sorted(Abstract.__abstractmethods__), sorted(Concrete.__abstractmethods__))
        print("DOC", Concrete.run.__doc__, Concrete().run(1), is_guarded(Concrete))
        seen = []
        class Meta(type):
            def __setattr__(cls, name, value):
                seen.append(name)
                if callable(value) and not getattr(value, "wrapped_by_meta", False):
                    inner = value
                    def value(self, *a, **k):
                        return inner(self, *a, **k)
                    value.wrapped_by_meta = True
                super().__setattr__(name, value)
        class Metaed(semmod.Base, metaclass=Meta):
            def run(self, x):
                return x * 2
        m = Metaed()
        results = {m.run(i) for i in range(1100)}
        print("META", seen, sorted(results)[:3], is_guarded(Metaed))
        print("DONE")
    ''', options=opts(targets="semmod:Base.run"))
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    expect("ABSTRACT refused" in res.out and "ABSTRACTS ['run'] []" in res.out, "an abstract run stays abstract", res)
    expect("DOC Runs x. 2 True" in res.out, "a guarded override keeps its docstring", res)
    expect("META [] [0, 2, 4] True" in res.out, "the metaclass saw no assignment; the guard was not wrapped", res)
    expect("guarded methods" not in res.err, "the guard table did not fill", res)


HOT_PROG = '''
    import functools, queue
    with open("hotmod.py", "w") as f:
        f.write("class K:\\n    def m(self, x):\\n        if x:\\n            x()\\n        return 1\\n")
    sys.path.insert(0, ".")
    import hotmod
    k = hotmod.K()
    q, cur, waits = queue.Queue(), [None], [0]
    def audit(event, args):
        if event == "tunerguard.serialize_wait":
            waits[0] += 1
            cur[0].set()  # the holder may leave: this call waits for it
    sys.addaudithook(audit)
    def holder():
        while True:
            pair = q.get()
            if pair is None:
                return
            k.m(lambda: (pair[0].set(), pair[1].wait()))
    th = threading.Thread(target=holder, daemon=True)
    th.start()
    def ready():
        """The holder inside k.m, blocked: the next guarded call must wait."""
        if cur[0] is not None:
            cur[0].set()
        inside, release = threading.Event(), threading.Event()
        cur[0] = release
        q.put((inside, release))
        inside.wait()
        return 0
    N = 200
    calls = 0
    def style(name, call):
        global calls
        before = waits[0]
        for i in range(N):
            ready()
            call()
        calls += N
        print("STYLE", name, waits[0] - before, "of", N)
    bound = k.m
    args, kw = (0,), {"x": 0}
    part = functools.partial(hotmod.K.m, k)
    style("method", lambda: k.m(0))
    style("class", lambda: hotmod.K.m(k, 0))
    style("bound", lambda: bound(0))
    style("star", lambda: k.m(*args))
    style("starstar", lambda: k.m(**kw))
    style("kw", lambda: k.m(x=0))
    style("partial", lambda: part(0))
    before = waits[0]
    list(map(k.m, (ready() for i in range(N))))
    print("STYLE map", waits[0] - before, "of", N)
    def other(self, x):
        if x:
            x()
        return 2
    if sys.version_info[:2] != (3, 11):  # a method descriptor there: no __code__
        hotmod.K.m.__code__ = other.__code__
        style("newcode", lambda: k.m(0))
        print("RESULT", k.m(0))
    cur[0].set()
    q.put(None)
    th.join()
    print("MINOR", sys.version_info[1])
    print("DONE")
'''


def check_guard_hot_calls(ctx):
    """Every way of calling a guarded simple-signature method, in loops hot
    enough for the specializing interpreter, passes through the guard: in
    serialize, each call made while another thread is inside waits (one
    tunerguard.serialize_wait event each); also after `__code__` is
    replaced."""
    res = ctx.run_py(HOT_PROG, options=opts(mode="serialize", targets="hotmod:K.m"))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    styles = re.findall(r"^STYLE (\w+) (\d+) of (\d+)$", res.out, re.M)
    expect(len(styles) == 9 and "RESULT 2" in res.out or len(styles) == 8 and "MINOR 11" in res.out,
           "every call style ran (the new __code__ ran)", res)
    bad = [s for s in styles if s[1] != s[2]]
    expect(not bad, "every call waited for the thread inside (guarded): %s" % bad, res)


TARGETS_MOD = '''
    with open("mymod.py", "w") as f:
        f.write("class Base:\\n    def run(self):\\n        return 1\\n"
                "class Sub(Base):\\n    pass\\n"
                "class S2:\\n    @staticmethod\\n    def run():\\n        return 2\\n")
    sys.path.insert(0, ".")
    import mymod
    print("BASE_GUARDED", is_guarded(mymod.Base))
'''


def check_targets_unguarded(ctx):
    """A targets= entry that guards nothing says why, once, in one line."""
    res = ctx.run_py(TARGETS_MOD, options=opts(
        targets="mymod:Sub.run,mymod:Nope.run,mymod:S2.run,mymod:Base.rnu,notimported:X.run"))
    expect(res.rc == 0 and "BASE_GUARDED False" in res.out, "program ran, nothing guarded", res)
    want = [r"targets=mymod:Sub\.run: Sub does not define run itself \(it inherits it\): name the class",
            r"targets=mymod:Nope\.run: module mymod has no class Nope; nothing guarded",
            r"targets=mymod:S2\.run: S2\.run is a staticmethod, not a plain function",
            r"targets=mymod:Base\.rnu: class Base has no method rnu; nothing guarded"]
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    for w in want:
        expect(sum(bool(re.search(w, ln)) for ln in lines) == 1, "one line: %s" % w, res)
    expect(len(lines) == len(want), "nothing else said (a module never imported is not an error)", res)
    # Base.run named too: Sub inherits the guarded method, nothing to say.
    res = ctx.run_py(TARGETS_MOD, options=opts(targets="mymod:Base.run,mymod:Sub.run"))
    expect(res.rc == 0 and "BASE_GUARDED True" in res.out and res.err == "", "guarded, silent", res)
    # Two targets on one class: the one that guards nothing still says so.
    res = ctx.run_py(TARGETS_MOD, options=opts(targets="mymod:Base.run,mymod:Base.rnu"))
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "BASE_GUARDED True" in res.out and len(lines) == 1
           and "targets=mymod:Base.rnu: class Base has no method rnu" in lines[0], "the sibling's line", res)
    # A class of the script itself: arming runs before the script, which is
    # never imported after, so it cannot be guarded: one line says so (not
    # "module __main__ has no class Foo").
    res = ctx.run_py('''
        class Foo:
            def run(self):
                return 1
        print("FOO_GUARDED", is_guarded(Foo))
    ''', options=opts(targets="__main__:Foo.run"))
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "FOO_GUARDED False" in res.out and len(lines) == 1
           and "classes of the script itself (__main__) cannot be guarded" in lines[0], "__main__ target", res)


def check_targets_module_run_with_dash_m(ctx):
    """targets= names a module the program runs with python -m: it is
    __main__, never imported under its name, so its classes are never
    guarded: one line says so."""
    tmp = ctx.tmpdir()
    with open(os.path.join(tmp, "umod.py"), "w") as f:
        f.write("class Tuner:\n    def run(self, x):\n        return x\nprint('RAN', Tuner().run(1))\n")
    res = ctx.run_argv([ctx.python, "-m", "umod"], options=opts(targets="umod:Tuner.run"), cwd=tmp)
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "RAN 1" in res.out, "the program ran", res)
    expect(len(lines) == 1 and "umod runs as the program itself (python -m umod), as __main__" in lines[0],
           "one line says its classes cannot be guarded", res)
    res = ctx.run_argv([ctx.python, "-c", "import umod"], options=opts(targets="umod:Tuner.run"), cwd=tmp)
    expect(res.rc == 0 and "tunerguard" not in res.err, "imported by name: nothing said", res)


def check_targets_deferred_body(ctx):
    """An async def, async generator or generator method named in targets=
    returns before its body runs: one line each says it cannot be guarded,
    and it runs as without tunerguard."""
    res = ctx.run_py('''
        with open("defmod.py", "w") as f:
            f.write("class T:\\n"
                    "    async def a(self, x):\\n        return x\\n"
                    "    async def ag(self, x):\\n        yield x\\n"
                    "    def g(self, x):\\n        yield x\\n")
        sys.path.insert(0, ".")
        import asyncio, defmod
        t = defmod.T()
        async def collect():
            return [v async for v in t.ag(2)]
        print("RAN", asyncio.run(t.a(1)), asyncio.run(collect()), list(t.g(3)))
        print("GUARDED", [is_guarded(defmod.T, n) for n in ("a", "ag", "g")])
    ''', options=opts(targets="defmod:T.a,defmod:T.ag,defmod:T.g"))
    expect(res.rc == 0 and "RAN 1 [2] [3]" in res.out and "GUARDED [False, False, False]" in res.out,
           "ran as without tunerguard, nothing guarded", res)
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    for what in ("defmod:T.a is a coroutine function (async def)", "defmod:T.ag is an async generator function",
                 "defmod:T.g is a generator function"):
        expect(sum(what in ln and "nothing guarded" in ln for ln in lines) == 1, "one line: " + what, res)
    expect(len(lines) == 3, "nothing else said", res)


DECLARED_PROG = '''
        with open("decl.py", "w") as f:
            f.write("class Tuner:\\n"
                    "    def run(self, hold=None):\\n"
                    "        if hold:\\n            hold()\\n"
                    "        return 1\\n")
        sys.path.insert(0, ".")
        import decl
        t = decl.Tuner()
        inside, go = threading.Event(), threading.Event()
        def hold():
            inside.set()
            go.wait()
        holder = threading.Thread(target=t.run, args=(hold,))
        holder.start()
        inside.wait()
        before = sys.getrefcount(decl.Tuner), sys.getrefcount(t)
        def other():
            for i in range(200):
                t.run()
        o = threading.Thread(target=other)
        o.start()
        o.join()
        print("REFS", sys.getrefcount(decl.Tuner) - before[0], sys.getrefcount(t) - before[1])
        go.set()
        holder.join()
        print("DONE")
    '''


def check_declared_repeats_keep_refcounts(ctx):
    """A declared tuner (targets=) raced 200 times from one call site: one
    report, 200 seen, and the repeats, counted before any capture, leave the
    reference counts of the tuner's class and instance as they were."""
    res = ctx.run_py(DECLARED_PROG, options=opts(targets="decl:Tuner.run"))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect("REFS 0 0" in res.out, "reference counts as they were", res)
    expect(re.search(r"^tunerguard: 1 race reported \(200 seen\)", res.err, re.M), "one report, 200 seen", res)
    # Suppressed: no report, and each of the 200 counted on its suppression
    # (the repeats too, which skip the capture).
    supp = os.path.join(ctx.tmpdir(), "decl.supp")
    with open(supp, "w") as f:
        f.write("race:^Tuner.run$\n")
    res = ctx.run_py(DECLARED_PROG, options=opts(targets="decl:Tuner.run", suppressions=supp, verbosity=1))
    expect(res.rc == 0 and "DONE" in res.out and "REFS 0 0" in res.out, "program ran, counts as they were", res)
    expect(re.search(r"^tunerguard:\s+200 race:\^Tuner\.run\$ \(line 1\)", res.err, re.M),
           "the suppression counted 200 times", res)
    # A tuning step that cannot be marked (misspelled): every overlap stays a
    # race, as its line says.
    res = ctx.run_py(DECLARED_PROG, options=opts(targets="decl:Tuner.run", tuning="decl:Tuner.bnech"))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect("has no plain method bnech; its overlaps are races whatever the threads inside do" in res.err
           and re.search(r"^tunerguard: 1 race reported \(200 seen\)", res.err, re.M),
           "the line, and the races reported", res)


def check_replaced_tuning_method(ctx):
    """The program replaces a tuning method (Autotuner._bench = my_bench):
    the new one says when a thread tunes, as the original did, so a thread
    entering while another is inside my_bench is a race, reported (with the
    original _bench it is; unmarked, it was a low-severity overlap, counted
    and not reported)."""
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        inside, go = threading.Event(), threading.Event()
        def my_bench(self, *args, **kwargs):
            if args and args[0] == "victim":
                inside.set()
                go.wait()
            return self.fn(*args, **kwargs)
        Autotuner._bench = my_bench
        tuner = Autotuner(my_kernel)
        victim = threading.Thread(target=tuner.run, args=("victim",))
        victim.start()
        inside.wait()
        other = threading.Thread(target=tuner.run, args=("other",))
        other.start()
        other.join()
        go.set()
        victim.join()
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1 and "Severity: high" in text,
           "the race inside the replaced tuning method is reported, high", res)


def check_metaclass_new_returns_other(ctx):
    """A metaclass whose __new__ returns something that is not a class, for
    a class made from a guarded one: returned as without tunerguard (the
    subclass watch read it as a class)."""
    res = ctx.run_py('''
        import struct
        from triton.runtime.autotuner import Autotuner
        class M(type):
            def __new__(m, n, b, ns):
                if n == "X":  # where a class keeps its MRO, a wild pointer
                    return b"\\0" * 312 + struct.pack("Q", 0x4141414141414141) + b"\\0" * 80
                return super().__new__(m, n, b, ns)
        class Base(Autotuner, metaclass=M):
            pass
        x = type("X", (Base,), {})
        print("MADE", type(x).__name__, len(x), is_guarded(Autotuner))
    ''', options=opts())
    expect(res.rc == 0 and "MADE bytes 400 True" in res.out and res.err == "", "as without tunerguard", res)


def check_replaced_by_async_said_once(ctx):
    """A guarded method replaced by an async def: one line, however often
    the original is called after (each call finds the replacement again)."""
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        t = Autotuner(my_kernel)
        orig = Autotuner.run
        async def arun(self, *a):
            return orig(self, *a)
        Autotuner.run = arun
        for i in range(2000):
            orig(t, i)
        print("DONE")
    ''', options=opts())
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect(len(lines) == 1 and "is a coroutine function (async def)" in lines[0], "one line", res)


def check_target_non_ascii(ctx):
    """A class named with a non-ASCII identifier (str.isidentifier() accepts
    it) is guarded like any other; it was refused as a bad option."""
    res = ctx.run_py('''
        with open("t\u00fcnmod.py", "w", encoding="utf-8") as f:
            f.write("class Tun\u00e9r:\\n    def r\u00fcn(self):\\n        return 7\\n")
        sys.path.insert(0, ".")
        import t\u00fcnmod
        print("GUARDED", is_guarded(t\u00fcnmod.Tun\u00e9r, "r\u00fcn"), t\u00fcnmod.Tun\u00e9r().r\u00fcn())
    ''', options=opts(targets="t\u00fcnmod:Tun\u00e9r.r\u00fcn"))
    expect(res.rc == 0 and "GUARDED True 7" in res.out, "the non-ASCII class is guarded and runs", res)
    expect(res.err == "", "nothing said", res)


def check_target_builtin_in_class_body(ctx):
    """`run = len` in a class body never binds self: left alone, one line."""
    res = ctx.run_py('''
        with open("mymod.py", "w") as f:
            f.write("class C:\\n    run = len\\n")
        sys.path.insert(0, ".")
        import mymod
        print("C", is_guarded(mymod.C), mymod.C().run([1, 2, 3]))
    ''', options=opts(targets="mymod:C.run"))
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "C False 3" in res.out, "the builtin called as before, unguarded", res)
    expect(len(lines) == 1 and "C.run is a builtin_function_or_method, not a plain function" in lines[0],
           "one line", res)


def check_target_class_refuses_setattr(ctx):
    """A class whose metaclass refuses every new attribute: its method is
    guarded all the same, with nothing said, and so is a subclass made later
    through the refusing metaclass.  Where the guard is the function's
    vectorcall (all but 3.11) nothing is set on the class; on 3.11 the
    descriptor is set as type.__setattr__ sets it, past the metaclass's own
    __setattr__ (the program's rule for its own assignments)."""
    res = ctx.run_py('''
        with open("mymod.py", "w") as f:
            f.write("class Meta(type):\\n"
                    "    def __setattr__(cls, name, value):\\n"
                    "        raise TypeError('frozen')\\n"
                    "class Frozen(metaclass=Meta):\\n    def run(self):\\n        return 5\\n"
                    "class Open:\\n    def run(self):\\n        return 6\\n")
        sys.path.insert(0, ".")
        import mymod
        print("FROZEN", is_guarded(mymod.Frozen), mymod.Frozen().run())
        print("OPEN", is_guarded(mymod.Open), mymod.Open().run())
        class Sub(mymod.Frozen):
            def run(self):
                return 7
        print("SUB", is_guarded(Sub), Sub().run())
        try:
            mymod.Frozen.run = lambda self: 8
        except TypeError as e:
            print("REFUSED", e)
    ''', options=opts(targets="mymod:Frozen.run,mymod:Open.run"))
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "FROZEN True 5" in res.out and "OPEN True 6" in res.out, "ran; both guarded", res)
    expect("SUB True 7" in res.out, "a subclass made later guarded", res)
    expect("REFUSED frozen" in res.out, "the program's own assignment still refused", res)
    expect(not lines, "nothing said", res)


# --------------------------------------------------------------------------
# (f) exitcode and halt_on_race

def check_exit_with_audit_hook_and_open_file(ctx):
    """A program with an audit hook of its own (the prelude's) that leaves a
    file open at exit, after a guarded import: the interpreter finalizes
    cleanly.  On 3.13, Python code run by tunerguard that late (a walk of
    every metaclass through type.__subclasses__()) corrupts the dict free
    list, and the process dies of SIGSEGV at exit."""
    res = ctx.run_py('''
        left_open = open("left_open.bin", "wb")
        from triton.runtime.autotuner import Autotuner
        Autotuner(my_kernel).run("one")
        class Later(Autotuner):  # a class made and a class attribute set: both hooks in use
            pass
        Later.extra = 1
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out and "fatal signal" not in res.err,
           "exit status 0, no fatal signal at finalization (%s)" % res.rc, res)


def check_exitcode(ctx):
    res = ctx.run_py(RACE_PROG % {"serialize": False} + "\n    sys.exit(3)\n", options=opts(exitcode=7))
    expect(res.rc == 7, "exitcode=7 after a race", res)
    expect("DONE" in res.out, "program ran to the end", res)
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        Autotuner(my_kernel).run(1)
        print("DONE")
    ''', options=opts(exitcode=7))
    expect(res.rc == 0, "no race: the program's own status 0", res)
    expect(res.err == "", "nothing on stderr", res)
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        Autotuner(my_kernel).run(1)
        sys.exit(5)
    ''', options=opts(exitcode=7))
    expect(res.rc == 5, "no race: the program's own status 5", res)


def check_prevented_is_race(ctx):
    """serialize: a race the wait prevented leaves the exit status alone and
    does not halt; with prevented_is_race=1 it sets exitcode= and halts as a
    race does (the same program, the same one prevented race)."""
    prog = RACE_PROG % {"serialize": True}
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


HALT_PROG = '''
    from triton.runtime.autotuner import Autotuner
    tuner = Autotuner(my_kernel)
    print("BEFORE", flush=True)
    race_once(tuner)
    print("AFTER", flush=True)
'''


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


# --------------------------------------------------------------------------
# (g) log_path into a missing directory

def check_log_path_missing_dir(ctx):
    res = ctx.run_py(RACE_PROG % {"serialize": False}, options="log_path=missing/dir/tg")
    expect(res.rc == 0 and "DONE" in res.out, "program unaffected", res)
    warn = [l for l in res.err.splitlines() if "cannot write report file" in l]
    expect(len(warn) == 1, "one warning line", res)
    expect(re.search(r"missing/dir/tg\.\d+\.txt", warn[0]), "the warning names the file", res)
    expect(res.err.count("WARNING: tunerguard") == 1 and "my_kernel" in res.err, "the report on stderr", res)
    no_files(res)


# --------------------------------------------------------------------------
# (h) repeats

def check_repeat_reported_once(ctx):
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        tuner = Autotuner(my_kernel)
        for i in range(5):
            race_once(tuner)
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 1, "the same race five times is reported once", res)
    objs = jsonl_lines(res)
    expect([o["kind"] for o in objs] == ["race", "repeats"], "the race, then at exit its repeats", res)
    expect(objs[1]["race_seq"] == objs[0]["seq"] and objs[1]["repeats"] == 4, "4 repeats of that race", res)
    expect(re.search(r"^  Report #%d of this process repeated 4 more times" % objs[0]["seq"], text, re.M)
           and "SUMMARY: tunerguard: seen again on 'my_kernel'" in text, "the text report says so", res)
    expect(re.search(r"^tunerguard: 1 race reported \(5 seen\)", res.err, re.M), "summary counts repeats", res)


def check_verbosity2_writes_every_occurrence(ctx):
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        tuner = Autotuner(my_kernel)
        for i in range(5):
            race_once(tuner)
        print("DONE")
    ''', options=opts(verbosity=2))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 5, "verbosity=2: all five written", res)
    expect("repeats" not in [o["kind"] for o in jsonl_lines(res)], "and no repeats record", res)


def check_distinct_races_reported(ctx):
    # counterpart of (h): two different tuners are two reports
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        def other_kernel(*a): return 1
        race_once(Autotuner(my_kernel))
        race_once(Autotuner(other_kernel))
        print("DONE")
    ''', options=opts())
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 2 and "other_kernel" in text, "two reports", res)
    expect(re.search(r"^tunerguard: 2 races reported", res.err, re.M), "summary", res)


def check_new_tuner_every_call_is_one_bug(ctx):
    # A program that builds its tuner inside the function it calls: a new
    # Autotuner (all kept alive: thirty addresses) for one kernel, raced at
    # one pair of call sites, is one bug: one report, thirty seen.  Fails if
    # the dedupe key holds the instance.
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        keep = []
        def step():
            tuner = Autotuner(my_kernel)
            keep.append(tuner)
            race_once(tuner)
        for i in range(30):
            step()
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 1, "thirty tuner objects, one report", res)
    expect(re.search(r"^tunerguard: 1 race reported \(30 seen\)", res.err, re.M), "summary: 1 of 30 seen", res)


def check_report_cap(ctx):
    # report_cap=2: five kernels raced, two reports written, the exit line
    # counts the other three.
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        def kernel(name):
            def k(*a, **kw): return "ok"
            k.__name__ = k.__qualname__ = name
            return k
        for i in range(5):
            race_once(Autotuner(kernel("kernel_%d" % i)))
        print("DONE")
    ''', options=opts(report_cap=2))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 2, "two reports written", res)
    expect(re.search(r"^tunerguard: 2 races reported \(5 seen\); 3 more reports not written \(report_cap=2\)",
                     res.err, re.M), "the exit line counts the rest", res)


def check_non_utf8_folder_escaped(ctx):
    # A program under a folder whose name is not UTF-8 (byte 0xff): its file
    # names read "run\\xff/prog.py" in the text report (the frames, the
    # summary, "What to do"), in the JSON Lines (valid JSON, the same four
    # characters) and in `tunerguard report`; never "?".
    tmp = ctx.tmpdir()
    folder = os.path.join(os.fsencode(tmp), b"run\xff")
    os.mkdir(folder)
    prog = os.path.join(folder, b"prog.py")
    with open(prog, "w") as f:
        f.write(prelude())
        f.write(textwrap.dedent('''
            from triton.runtime.autotuner import Autotuner
            race_once(Autotuner(my_kernel))
            print("DONE")
        '''))
    res = ctx.run_argv([ctx.python, prog], opts(), cwd=tmp)
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    shown = "run\\xff/prog.py:"
    expect(("  What to do: run with TUNERGUARD_OPTIONS=mode=serialize; or call " in text
            and text.count(shown) >= 3 and "?:" not in text), "the text report shows the byte as \\xff", res)
    objs = jsonl_lines(res)
    files = [fr["file"] for fr in objs[0]["entering"]["python"]]
    expect(any(f.endswith("run\\xff/prog.py") for f in files) and "?" not in files,
           "the JSON frame's file has the same four characters", res)
    cli = os.path.join(os.path.dirname(ctx.lib), "tunerguard")
    if os.access(cli, os.X_OK):
        rep = subprocess.run([cli, "report", res.files("tg.*.jsonl")[0]], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=ctx.env(preload=False))
        out = rep.stdout.decode(errors="replace")
        expect(shown in out and "?:" not in out, "tunerguard report shows it too:\n" + out, res)


def check_distinct_call_sites_reported(ctx):
    # One tuner, the same thread inside at the same place, the entering thread
    # calling it from two lines: two races (each call site is its own bug),
    # the repeat of either one not reported again.  Fails if the dedupe key
    # leaves out the entering thread's frames, on every interpreter.
    res = ctx.run_py('''
        from triton.runtime.autotuner import Autotuner
        tuner = Autotuner(my_kernel)
        def site_a(): return tuner.run("other")
        def site_b(): return tuner.run("other")
        for enter in (site_a, site_b, site_a):
            race_once(tuner, enter=enter)
        print("DONE")
    ''', options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 2 and "in site_a" in text and "in site_b" in text,
           "two call sites into one tuner are two reports", res)
    expect(re.search(r"^tunerguard: 2 races reported \(3 seen\)", res.err, re.M), "summary: 2 of 3 seen", res)


# --------------------------------------------------------------------------
# (i) fork while another thread is inside a tuner

FORK_PROG = '''
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)   # 3.12+: fork with threads
    from triton.runtime.autotuner import Autotuner
    tuner = Autotuner(my_kernel)
    entered = threading.Event(); release = threading.Event()
    def hook(t, tag, *rest):
        if tag == "victim":
            entered.set(); release.wait()
    tuner.hook = hook
    th = threading.Thread(target=tuner.run, args=("victim",)); th.start()
    entered.wait()
    pid = os.fork()
    if pid == 0:
        ok = tuner.run("child") == "ok"
        tuner.run("child2")
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    print("CHILD_STATUS", status)
    release.set(); th.join()
    print("DONE")
'''


def check_fork(ctx):
    for mode in ("detect", "serialize"):
        res = ctx.run_py(FORK_PROG, options=opts(mode=mode), timeout=30)
        expect(not res.timed_out, "%s: the fork child hung (blocked in tunerguard?)" % mode, res)
        expect(res.rc == 0 and "CHILD_STATUS 0" in res.out and "DONE" in res.out,
               "%s: the child called the tuner and exited 0" % mode, res)
        expect("WARNING" not in res.err and "race" not in res.err, "%s: nothing reported" % mode, res)
        no_files(res)


FORK_AFTER_RACE_PROG = '''
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)
    from triton.runtime.autotuner import Autotuner
    race_once(Autotuner(my_kernel))
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        # the child reported nothing: its stderr goes to a file we inspect (a
        # log opened for appending, which tunerguard would write to)
        fd = os.open("child_stderr.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        sys.exit(0)      # normal exit: finalisation and destructors run
    _, status = os.waitpid(pid, 0)
    print("CHILD_EXIT", os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)
    print("DONE")
'''


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

# --------------------------------------------------------------------------
# (j) report files in a hostile folder: created new, never through a link,
# never a FIFO; names unique per process; one naming rule

# The program plants things at its own report names before the race, as
# someone who can guess the pid would.
PLANT_PROG = """
    pid = os.getpid()
    for ext in %(exts)r:
        name = "tg.%%d%%s" %% (pid, ext)
        if %(fifo)r:
            os.mkfifo(name)
        else:
            os.symlink(os.path.abspath("precious" + ext), name)
""" + RACE_PROG


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


PRECIOUS = '''
    for e in (".txt", ".jsonl", ".trace.json"):
        with open("precious" + e, "w") as f:
            f.write("keep me\\n")
'''


def check_planted_symlinks(ctx):
    for ext in (".txt", ".jsonl", ".trace.json"):
        prog = PRECIOUS + PLANT_PROG % {"exts": [ext], "fifo": False, "serialize": False}
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
PLANTED_FOLDER_PROG = """
    os.mkdir("shared"); os.chmod("shared", 0o1777); os.mkdir("elsewhere")
    os.symlink(os.path.abspath("elsewhere"), "shared/evil")
    os.lchown("shared/evil", 4242, -1)
""" + RACE_PROG


def check_log_path_through_planted_link(ctx):
    if os.geteuid() != 0:
        print("  (skipped log_path_through_planted_link: needs root to give a link away)")
        return
    res = ctx.run_py(PLANTED_FOLDER_PROG % {"serialize": False}, options="log_path=shared/evil/tg")
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
        res = ctx.run_py(PLANT_PROG % {"exts": [ext], "fifo": True, "serialize": False},
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
        res = ctx.run_py(RACE_PROG % {"serialize": False}, options=opts(trace=1), extra_env={"RANK": rank})
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


CHDIR_PROG = '''
    os.mkdir("sub")
    os.chdir("sub")
''' + RACE_PROG


def check_chdir_after_start(ctx):
    res = ctx.run_py(CHDIR_PROG % {"serialize": False}, options="log_path=tg")
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
        f.write(textwrap.dedent(RACE_PROG % {"serialize": False}))
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
    res = ctx.run_py(RACE_PROG % {"serialize": False}, options=opts(verbosity=1), extra_env={"LD_PRELOAD": pre})
    expect(res.rc == 0 and "DONE" in res.out, "the program ran to its end", res)
    expect("RecursionError" not in res.err and "Traceback" not in res.err, "no RecursionError", res)
    path, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1, "one report", res)
    expect(len(jsonl_lines(res)) == 1, "one JSON line", res)
    inert = [l for l in res.err.splitlines() if "stays inert" in l]
    expect(len(inert) == 1 and inert[0].startswith("tunerguard: %s serves this process" % paths[0])
           and paths[1] in inert[0], "one line (verbosity=1): the first copy serves, the second stays inert", res)
    quiet = ctx.run_py(RACE_PROG % {"serialize": False}, options=opts(), extra_env={"LD_PRELOAD": pre})
    expect(quiet.rc == 0 and "stays inert" not in quiet.err, "nothing said about the copies at verbosity=0", quiet)


def check_two_copies_serialize(ctx):
    pre, _ = two_copies(ctx)
    res = ctx.run_py(RACE_PROG % {"serialize": True}, options=opts(mode="serialize"), extra_env={"LD_PRELOAD": pre})
    expect(res.rc == 0 and "DONE" in res.out and "Traceback" not in res.err, "program completed", res)
    expect("WAIT_EVENTS 1" in res.out, "tunerguard.serialize_wait raised once", res)
    expect("ORDER victim:start,victim:end,other:start,other:end" in res.out,
           "the second call ran only after the first ended", res)
    expect(len(re.findall(r"^tunerguard: .*serialized", res.err, re.M)) == 1, "one summary line", res)


# The program closes what it inherited and opens files of its own, which take
# the lowest numbers: where libunwind's address-validation pipe (3, 4) and the
# report files were.  Each race's second entrant is a new thread (its first
# native capture: libunwind validates addresses at the stack's outermost
# frame).  The files must be untouched: the input reads whole from its first
# byte, nothing is written to the others; the reports and the trace (trace=1)
# are in their own files.
OWN_FDS_PROG = """
    from triton.runtime.autotuner import Autotuner
    tuner = Autotuner(my_kernel)
    race_once(tuner, serialize=%(serialize)s)  # report files open, libunwind used
    os.closerange(3, 256)
    fin = os.open("in.txt", os.O_RDONLY)
    fouts = [os.open("out%%d.bin" %% i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for i in range(8)]
    def enter(t):
        th = threading.Thread(target=t.run, args=("other",))
        th.start(); th.join()
    for i in range(3):
        t = Autotuner(my_kernel)
        race_once(t, serialize=%(serialize)s, enter=lambda: enter(t))
    print("FDS", fin, fouts[0])
    print("IN", os.read(fin, 100).decode())
    for fd in [fin] + fouts:
        os.close(fd)
    print("DONE pid", os.getpid())
"""


def check_program_fds_untouched(ctx):
    for serialize in (False, True):
        tmp = ctx.tmpdir()
        with open(os.path.join(tmp, "in.txt"), "w") as f:
            f.write("0123456789")
        prog = os.path.join(tmp, "prog.py")
        with open(prog, "w") as f:
            f.write(prelude())
            f.write(textwrap.dedent(OWN_FDS_PROG % {"serialize": serialize}))
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
CLOSED_STDERR_PROG = """
    mine = os.open("mine.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(mine, b"mine\\n")
    from triton.runtime.autotuner import Autotuner
    race_once(Autotuner(my_kernel))
    print("FD", mine)
    print("DONE pid", os.getpid())
"""

# The same with the target imported and a race reported (libunwind's pipe,
# the report files, the trace opened) before the program opens its file: it
# still gets fd 2, tunerguard holds no standard number.  symbolize=1: libdw
# (file:line, symbolize=2) keeps the ELF files it read open, wherever they
# landed (a limit, not tested here).
CLOSED_STDERR_LATE_PROG = """
    from triton.runtime.autotuner import Autotuner
    race_once(Autotuner(my_kernel))
    mine = os.open("mine.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(mine, b"mine\\n")
    race_once(Autotuner(my_kernel))
    print("FD", mine)
    print("DONE pid", os.getpid())
"""


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
STDERR_TAKEN_PROG = """
    import signal
    os.close(2)
    data = os.open("data.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(data, b"DATA")
    from triton.runtime.autotuner import Autotuner
    race_once(Autotuner(my_kernel))
    print("FD", data)
    if %(append_log)s:
        log = os.open("log.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 2)
    print("DONE pid", os.getpid())
"""


def check_stderr_taken_by_program_file(ctx):
    for log_path, append_log in (("tg", False), ("stderr", False), ("tg", True)):
        res = ctx.run_py(STDERR_TAKEN_PROG % {"append_log": append_log}, options="log_path=" + log_path)
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
STDERR_SAME_FS_PROG = """
    st_start = os.stat("start.txt")
    data = os.open("data.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(data, b"DATA")
    os.dup2(data, 2)
    st = os.fstat(2)
    print("SAME_DEV", st.st_dev == st_start.st_dev, "SAME_INO", st.st_ino == st_start.st_ino)
    from triton.runtime.autotuner import Autotuner
    race_once(Autotuner(my_kernel))
    print("DONE pid", os.getpid())
"""


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
STDERR_CAPTURE_PROG = """
    import tempfile
    cap = tempfile.TemporaryFile()
    saved = os.dup(2)
    os.dup2(cap.fileno(), 2)
    from triton.runtime.autotuner import Autotuner
    race_once(Autotuner(my_kernel))
    os.dup2(saved, 2)
    cap.seek(0)
    print("CAPTURED", cap.read().decode().count("WARNING: tunerguard"))
    print("DONE pid", os.getpid())
"""


def check_stderr_capture_by_test_runner(ctx):
    res = ctx.run_py(STDERR_CAPTURE_PROG, options="log_path=stderr")
    expect(res.rc == 0 and "DONE" in res.out, "the program ran", res)
    expect("CAPTURED 1" in res.out, "the report went to the capture file on fd 2", res)


# fd 2 made a pipe by the program: its reader gone (SIGPIPE's default
# restored, as command-line tools do), or alive and never reading, the pipe
# full.  tunerguard's exit line must neither kill the process nor hang it.
STDERR_PIPE_PROG = """
    import fcntl, signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    r, w = os.pipe()
    if %(full)s:
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"x" * 4096)
        except BlockingIOError:
            pass
        os.set_blocking(w, True)
    else:
        os.close(r)
    os.dup2(w, 2)
    from triton.runtime.autotuner import Autotuner
    race_once(Autotuner(my_kernel), serialize=%(serialize)s)
    print("DONE pid", os.getpid(), flush=True)
"""


def check_stderr_pipe_broken_or_full(ctx):
    for full in (False, True):
        for options in (opts(), opts(mode="serialize"), "log_path=stderr"):
            res = ctx.run_py(STDERR_PIPE_PROG % {"full": full, "serialize": "serialize" in options}, options=options,
                             timeout=60)
            what = "%s, %s" % ("a full pipe" if full else "a pipe without reader", options)
            expect(res.rc == 0 and "DONE" in res.out, "%s: the program's status kept (%s)" % (what, res.rc), res)


# The same planted link in a folder its group may write (0775, 0770): not
# followed either; report files created in such a folder are 0600.
GROUP_FOLDER_PROG = """
    os.mkdir("shared"); os.chmod("shared", %(mode)s); os.mkdir("elsewhere")
    os.symlink(os.path.abspath("elsewhere"), "shared/evil")
    os.lchown("shared/evil", 4242, -1)
""" + RACE_PROG


def check_group_writable_folder(ctx):
    if os.geteuid() != 0:
        print("  (skipped group_writable_folder: needs root to give a link away)")
        return
    for mode in ("0o775", "0o770"):
        res = ctx.run_py(GROUP_FOLDER_PROG % {"mode": mode, "serialize": False}, options="log_path=shared/evil/tg")
        expect(res.rc == 0 and "DONE" in res.out, "%s: the program ran" % mode, res)
        expect(os.listdir(os.path.join(res.tmp, "elsewhere")) == [], "%s: nothing written through the link" % mode,
               res)
        said = [l for l in res.err.splitlines() if "symbolic link 'evil'" in l]
        expect(len(said) == 1 and "not followed" in said[0], "%s: one line names the link" % mode, res)
        res = ctx.run_py(GROUP_FOLDER_PROG % {"mode": mode, "serialize": False}, options="log_path=shared/tg")
        expect(res.rc == 0 and "DONE" in res.out, "%s: the program ran" % mode, res)
        made = glob.glob(os.path.join(res.tmp, "shared", "tg.*"))
        expect(len(made) == 2, "%s: the reports in shared/: %s" % (mode, made), res)
        for f in made:
            expect(stat.S_IMODE(os.stat(f).st_mode) == 0o600, "%s: %s is 0600" % (mode, f), res)


# A disk that fills: after the first report no file may grow past a limit
# (RLIMIT_FSIZE, SIGXFSZ ignored: a write past it fails with EFBIG, part
# way through a record).  Every line of the .jsonl parses, the .txt holds
# whole reports only; one line per file says it failed.
FULL_DISK_PROG = """
    import glob, resource, signal
    from triton.runtime.autotuner import Autotuner
    race_once(Autotuner(my_kernel))
    sizes = [os.path.getsize(f) for f in glob.glob("tg.*")]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    lim = max(sizes) + 700
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim, lim))
    for i in range(4):
        race_once(Autotuner(my_kernel))
    print("DONE pid", os.getpid())
"""


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


# --------------------------------------------------------------------------
# (k) which exceptions of a raced call are linked to the race

# The victim parks inside tuner.run; the calling thread then makes CALLS
# calls of its own, each racing with it; then the victim is let go.  Each
# call's exception (and the victim's) is caught, and its notes kept.
EXC_LINK_PROG = r"""
import functools, signal
from triton.runtime.autotuner import Autotuner
notes, errors = [], []
def catch(fn, *args):
    try:
        fn(*args)
    except BaseException as e:
        errors.append(type(e).__name__)
        notes.extend(n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:"))
class Sub(Autotuner):  # the program's own subclass: its run is guarded, Triton's code raises
    def run(self, *args, **kwargs):
        return super().run(*args, **kwargs)
tuner = %(cls)s(%(fn)s)
entered, release = threading.Event(), threading.Event()
def hook(t, tag, *rest):
    if tag == "victim":
        entered.set()
        release.wait()
    elif tag == "own":
        {}["missing"]  # the program's own KeyError
tuner.hook = hook
th = threading.Thread(target=catch, args=(tuner.run, "victim"), name="victim")
th.start()
entered.wait()
for i in range(%(calls)d):
    catch(tuner.run, "%(tag)s")
release.set()
th.join()
print("ERRORS", sorted(errors), "NOTES", len(notes), "NOTED", int(sys.version_info >= (3, 11)))
"""


def linked_exceptions(res):
    return [o for o in jsonl_lines(res) if o.get("kind") == "exception"]


def check_exception_own_keyerror_not_linked(ctx):
    """A KeyError the program raises itself (in its hook) inside a call that
    overlapped is the program's, not the race's: no note, no record."""
    res = ctx.run_py(EXC_LINK_PROG % {"cls": "Autotuner", "fn": "my_kernel", "calls": 1, "tag": "own"}, options=opts())
    expect("ERRORS ['KeyError'] NOTES 0" in res.out, "the KeyError raised, without a note", res)
    expect(not linked_exceptions(res), "no exception record", res)
    expect("linked" not in res.err, "the exit line links none", res)


def check_exception_keyboard_interrupt_not_linked(ctx):
    """A KeyboardInterrupt raised inside the tuner's own frames (where a
    Ctrl-C lands) is never the race's."""
    res = ctx.run_py(EXC_LINK_PROG % {"cls": "Autotuner", "fn": "functools.partial(signal.default_int_handler, 2)",
                                     "calls": 1, "tag": "other"},
                     options=opts())
    expect("ERRORS ['KeyboardInterrupt', 'KeyboardInterrupt'] NOTES 0" in res.out, "both interrupted, no note",
           res)
    expect(not linked_exceptions(res), "no exception record", res)


def check_exception_every_linked_one_counted(ctx):
    """TypeErrors raised in the tuner's own frames (its shared state cleared)
    are linked, each one with a note, and the exit line counts every one;
    also through the program's own subclass (its run guarded, Triton's
    code raising)."""
    for cls in ("Autotuner", "Sub"):
        res = ctx.run_py(EXC_LINK_PROG % {"cls": cls, "fn": "None", "calls": 3, "tag": "other"}, options=opts())
        expect_four_linked(res)


def expect_four_linked(res):
    m = re.search(r"NOTES (\d+) NOTED (\d)", res.out)
    expect("ERRORS ['TypeError', 'TypeError', 'TypeError', 'TypeError']" in res.out and m, "four TypeErrors", res)
    expect(int(m.group(1)) == 4 * int(m.group(2)), "a note on each (3.11+)", res)
    linked = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(linked and int(linked.group(1)) == 4, "the exit line counts the 4 linked exceptions", res)
    expect(linked_exceptions(res), "an exception record", res)


# A fast-path call ("fast") is inside; B and C enter after it and go on to
# benchmark (a low-severity overlap at each entry: nothing was benchmarking
# yet).  The fast call returns and clears the arguments both read next: both
# TypeErrors are the race's.  B sits in a lower occupant slot than C, so the
# check at that return finds B first; C is released first, so no later
# return links it.  Broken (only the first occupant found linked at the
# return), C's TypeError has no note and no record.
CLEARED_AT_EXIT_PROG = r"""
from cleartuner import ClearTuner
errors, notes = {}, {}
events = {(t, p): threading.Event() for t in ("fast", "B", "C") for p in ("entered", "bench", "to_bench", "go")}
def gate(tag, phase):
    events[(tag, phase)].set()
    if tag != "fast" and phase == "entered":  # not benchmarking until both are in
        events[(tag, "to_bench")].wait(20)
    else:
        events[(tag, "go")].wait(20)
tuner = ClearTuner(gate)
def call(tag):
    try:
        tuner.run(tag)
    except BaseException as e:
        errors[tag] = type(e).__name__
        notes[tag] = [n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")]
slots = {}
fast = start_in("fast", lambda: call("fast"), lambda s: True, slots, events[("fast", "entered")])
b = start_in("B", lambda: call("B"), lambda s: s != slots["fast"] and s <= 5, slots, events[("B", "entered")])
c = start_in("C", lambda: call("C"), lambda s: s != slots["fast"] and s > slots["B"], slots, events[("C", "entered")])
for tag in ("B", "C"):
    events[(tag, "to_bench")].set()
    assert events[(tag, "bench")].wait(20), tag
events[("fast", "go")].set()
fast.join()
events[("C", "go")].set()
c.join()
events[("B", "go")].set()
b.join()
print("ERRORS", sorted(errors.items()), "NOTES", sorted((k, len(v)) for k, v in notes.items()),
      "NOTED", int(sys.version_info >= (3, 11)))
"""


def check_exception_every_cleared_call_linked(ctx):
    """Two calls benchmarking when another call's return clears the tuner's
    arguments: both TypeErrors are linked to that race, not just the first
    call the check at the return finds."""
    res = ctx.run_py(CLEARED_AT_EXIT_PROG, options=opts())
    expect("ERRORS [('B', 'TypeError'), ('C', 'TypeError')]" in res.out, "B and C raised TypeError", res)
    expect(len(linked_exceptions(res)) == 1, "one exception record (the second is its repeat)", res)
    m = re.search(r"NOTES (\[.*?\]) NOTED (\d)", res.out)
    want = "[('B', 1), ('C', 1)]" if m and m.group(2) == "1" else "[('B', 0), ('C', 0)]"
    expect(m and m.group(1) == want, "a note on each (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 2, "the exit line counts both", res)


# One thread, one call of a subclass whose run() calls _bench with the
# tuner's `nargs` attribute gone (a tuner that keeps its arguments elsewhere),
# then, as a control, with it None: only None is what another call's return
# left (the race seen when a call begins tuning).  Broken (a missing
# attribute taken for a cleared one), the first call is reported as a race.
NO_NARGS_PROG = r"""
from triton.runtime.autotuner import Autotuner
class Keeps(Autotuner):
    def run(self, tag):
        if self.drop:
            del self.nargs
        return self._bench(tag)
tuner = Keeps(lambda tag: tag)
tuner.drop = os.environ["NARGS"] == "drop"
print("RESULT", tuner.run("one"), hasattr(tuner, "nargs"))
"""


def check_no_nargs_attribute_not_cleared(ctx):
    """A tuner with no `nargs` attribute at all has not had its arguments
    cleared: no race when its call begins tuning.  None is (the control)."""
    res = ctx.run_py(NO_NARGS_PROG, options=opts(), extra_env={"NARGS": "drop"})
    expect(res.rc == 0 and "RESULT one False" in res.out, "ran, the attribute gone", res)
    expect(res.err == "", "nothing said", res)
    no_files(res, "no report")
    res = ctx.run_py(NO_NARGS_PROG, options=opts(), extra_env={"NARGS": "keep"})
    expect(res.rc == 0 and "RESULT one True" in res.out, "ran, the attribute None", res)
    _, text = only_report(res)
    expect("another call cleared a tuner call's arguments before it began tuning" in text,
           "the control: None is reported as cleared", res)


# serialize: the main thread's call waits for the turn (held by the thread
# inside, which keeps running Python code), goes on without it past the
# bypass, and then waits for the tuner: one call, two waits.  The thread
# inside runs until that second wait has begun (the second serialize_wait
# audit event), with a safety time-out.  Broken (each wait counted), the
# exit line says 2 calls serialized.
TWO_WAITS_PROG = """
    import time
    from triton.runtime.autotuner import Autotuner
    inside = threading.Event()
    def hook(t, tag, *rest):
        if tag == "victim":
            inside.set()
            end = time.monotonic() + 20
            while len(_wait_events) < 2 and time.monotonic() < end:
                sum(range(1000))  # running, the GIL taken and given back
    tuner = Autotuner(my_kernel, hook)
    th = threading.Thread(target=tuner.run, args=("victim",), name="victim")
    th.start()
    inside.wait()
    tuner.run("other")
    th.join()
    print("WAITS", len(_wait_events))
"""


def check_exit_line_one_count_per_call(ctx):
    """serialize: a call that waited for the turn and then for the tuner is
    one serialized call on the exit line."""
    res = ctx.run_py(TWO_WAITS_PROG, options=opts(mode="serialize"))
    expect(res.rc == 0 and "WAITS 2" in res.out, "the call waited for the turn, then for the tuner", res)
    line = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard: ")]
    expect(line and "; 1 call serialized, waited " in line[-1], "one call serialized", res)


# serialize: a wait still going when the program exits (a daemon thread
# waits for a tuner a daemon holder never leaves).  The main thread sees the
# wait begin (the serialize_wait audit event: the turn's), then lets 0.3 s
# pass and returns.  The exit line counts the call and its time so far, at
# least those 0.3 s, and says one is still waiting.  Broken, it said nothing
# of that call ("waited 0.000 s", or no line at all).
STILL_WAITING_PROG = """
    import time
    from triton.runtime.autotuner import Autotuner
    inside, never, waiting = threading.Event(), threading.Event(), threading.Event()
    began = []
    _wait_callbacks.append(lambda: (began.append(time.monotonic()), waiting.set()))
    def hook(t, tag, *rest):
        if tag == "holder":
            inside.set()
            never.wait(60)
    tuner = Autotuner(my_kernel, hook)
    threading.Thread(target=tuner.run, args=("holder",), name="holder", daemon=True).start()
    inside.wait()
    threading.Thread(target=tuner.run, args=("waiter",), name="waiter", daemon=True).start()
    assert waiting.wait(20)
    threading.Event().wait(0.3)
    print("WAITED AT LEAST %.3f" % (time.monotonic() - began[0]), flush=True)
"""


def check_exit_line_counts_wait_in_progress(ctx):
    """serialize: a wait not over at exit is in the exit line's count and
    total."""
    res = ctx.run_py(STILL_WAITING_PROG, options=opts(mode="serialize"))
    m = re.search(r"WAITED AT LEAST ([0-9.]+)", res.out)
    expect(res.rc == 0 and m, "the waiter began waiting, the program ended", res)
    line = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard: ")]
    w = re.search(r"(\d+) calls? serialized, waited ([0-9.]+) s in total \(1 still waiting at exit\)",
                  line[-1] if line else "")
    expect(w and int(w.group(1)) == 1 and float(w.group(2)) >= float(m.group(1)) - 0.002,
           "the wait still going is counted, its time so far included", res)


# Ten threads inside one tuner at once, more than its entry has occupant
# slots (8): each parks in its benchmark until all ten are in, then each
# raises TypeError in the tuner's own code.  Every one of them raced, so
# every one is linked.  Broken (the link kept on the occupant slot only),
# the two threads without a slot raise without a note.
OVERFLOW_PROG = r"""
from triton.runtime.autotuner import Autotuner
N = 10
errors, notes = [], []
all_in = threading.Barrier(N, timeout=20)
def hook(t, tag, *rest):
    all_in.wait()
tuner = Autotuner(None, hook)  # fn None: the tuner's _bench raises TypeError
def call(i):
    try:
        tuner.run(i)
    except BaseException as e:
        errors.append(type(e).__name__)
        notes.extend(n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:"))
ts = [threading.Thread(target=call, args=(i,), name="t%d" % i) for i in range(N)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("ERRORS", len(errors), sorted(set(errors)), "NOTES", len(notes), "NOTED", int(sys.version_info >= (3, 11)))
"""


def check_exception_linked_past_occupant_slots(ctx):
    """More threads inside one tuner than it has occupant slots: every
    thread's exception is linked, the ones without a slot too."""
    res = ctx.run_py(OVERFLOW_PROG, options=opts())
    m = re.search(r"ERRORS (\d+) \['TypeError'\] NOTES (\d+) NOTED (\d)", res.out)
    expect(m and m.group(1) == "10", "ten TypeErrors", res)
    linked = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(linked and int(linked.group(1)) == 10, "the exit line counts ten linked", res)
    expect(int(m.group(2)) == 10 * int(m.group(3)), "a note on each (3.11+)", res)


# The call whose return clears the arguments has no occupant slot: 'tuner'
# entered first and 7 fast-path calls after it hold the tuner's 8 slots
# (verbosity=1: registered sessions from the first call on), then 'fast'
# enters with none left.  'tuner' goes on to benchmark and parks there;
# 'fast' returns (self.nargs = None); 'tuner' reads the arguments: TypeError.
# Nobody was benchmarking at any entry, so only the check at fast's return
# can link it.  Broken (no check for a session without a slot), tuner's
# TypeError has no note and is not counted.
SLOTLESS_CLEAR_PROG = r"""
import collections
from cleartuner import ClearTuner
errors, notes = {}, {}
ev = collections.defaultdict(threading.Event)
def gate(tag, phase):  # parks each thread, by name, where main says
    me = threading.current_thread().name
    ev[(me, phase)].set()
    ev[(me, phase + "-go")].wait(20)
tuner = ClearTuner(gate)
def call(tag):
    try:
        tuner.run(tag)
    except BaseException as e:
        name = threading.current_thread().name
        errors[name] = type(e).__name__
        notes[name] = len([n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")])
def start(name, tag):
    th = threading.Thread(target=call, args=(tag,), name=name)
    th.start()
    assert ev[(name, "entered")].wait(20), name
    return th
first = start("tuner", "tuner")
fillers = [start("fill%d" % i, "fast") for i in range(7)]
fast = start("fast", "fast")
ev[("tuner", "entered-go")].set()
assert ev[("tuner", "bench")].wait(20)
ev[("fast", "entered-go")].set()
fast.join()
ev[("tuner", "bench-go")].set()
first.join()
for i, th in enumerate(fillers):
    ev[("fill%d" % i, "entered-go")].set()
    th.join()
print("ERRORS", sorted(errors.items()), "NOTES", sorted(notes.items()), "NOTED", int(sys.version_info >= (3, 11)))
"""


def check_exception_linked_by_slotless_return(ctx):
    """A return without an occupant slot clears the arguments a benchmarking
    call reads next: that call's TypeError is linked to the race."""
    res = ctx.run_py(SLOTLESS_CLEAR_PROG, options=opts(verbosity=1))
    expect("ERRORS [('tuner', 'TypeError')]" in res.out, "tuner raised TypeError, nobody else", res)
    m = re.search(r"NOTES \[\('tuner', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(2), "a note on it (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 1, "the exit line counts it", res)


# Two calls benchmark at once ('t1' and 't2': each entered while nobody was
# benchmarking, then went into its benchmark and parks there); 'fast' enters
# (a race, reported with one of them, the first found), returns and clears
# the arguments; 't1' and 't2' read them: a TypeError each.  Nobody began
# benchmarking during fast's call, so its return makes no check: only fast's
# entry can link them.  Broken (the entry links the one thread it reports
# with), the other's TypeError has no note and is not counted.
TWO_BENCHMARKING_PROG = r"""
import collections
from cleartuner import ClearTuner
errors, notes = {}, {}
ev = collections.defaultdict(threading.Event)
def gate(tag, phase):  # parks each thread, by name, where main says
    me = threading.current_thread().name
    ev[(me, phase)].set()
    ev[(me, phase + "-go")].wait(20)
tuner = ClearTuner(gate)
def call(tag):
    try:
        tuner.run(tag)
    except BaseException as e:
        name = threading.current_thread().name
        errors[name] = type(e).__name__
        notes[name] = len([n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")])
def start(name, tag):
    th = threading.Thread(target=call, args=(tag,), name=name)
    th.start()
    assert ev[(name, "entered")].wait(20), name
    return th
t1 = start("t1", "t1")
t2 = start("t2", "t2")
for name in ("t1", "t2"):
    ev[(name, "entered-go")].set()
    assert ev[(name, "bench")].wait(20), name
fast = start("fast", "fast")
ev[("fast", "entered-go")].set()
fast.join()
for name, th in (("t1", t1), ("t2", t2)):
    ev[(name, "bench-go")].set()
    th.join()
print("ERRORS", sorted(errors.items()), "NOTES", sorted(notes.items()), "NOTED", int(sys.version_info >= (3, 11)))
"""


def check_exception_linked_for_every_benchmarking_call(ctx):
    """A race at entry while two calls benchmark: the entering call's return
    clears what both read next, and both TypeErrors are linked."""
    res = ctx.run_py(TWO_BENCHMARKING_PROG, options=opts())
    expect("ERRORS [('t1', 'TypeError'), ('t2', 'TypeError')]" in res.out, "t1 and t2 raised TypeError", res)
    m = re.search(r"NOTES \[\('t1', (\d)\), \('t2', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(3) and m.group(2) == m.group(3), "a note on each (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 2, "the exit line counts both", res)


# The call that raises has no occupant slot: eight fast-path calls hold the
# tuner's 8 slots (verbosity=1: registered from the start), 'tuner' enters
# without one, goes into its benchmark and parks there; one filler returns
# (self.nargs = None); 'tuner' reads the arguments: TypeError.  The check at
# the filler's return looks at the slots and finds nobody benchmarking, so
# only tuner's own return can link it.  Broken, tuner's TypeError has no
# note and is not counted.
SLOTLESS_RAISE_PROG = r"""
import collections
from cleartuner import ClearTuner
errors, notes = {}, {}
ev = collections.defaultdict(threading.Event)
def gate(tag, phase):  # parks each thread, by name, where main says
    me = threading.current_thread().name
    ev[(me, phase)].set()
    ev[(me, phase + "-go")].wait(20)
tuner = ClearTuner(gate)
def call(tag):
    try:
        tuner.run(tag)
    except BaseException as e:
        name = threading.current_thread().name
        errors[name] = type(e).__name__
        notes[name] = len([n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")])
def start(name, tag):
    th = threading.Thread(target=call, args=(tag,), name=name)
    th.start()
    assert ev[(name, "entered")].wait(20), name
    return th
fillers = [start("fill%d" % i, "fast") for i in range(8)]
first = start("tuner", "tuner")
ev[("tuner", "entered-go")].set()
assert ev[("tuner", "bench")].wait(20)
ev[("fill0", "entered-go")].set()
fillers[0].join()
ev[("tuner", "bench-go")].set()
first.join()
for i, th in enumerate(fillers):
    ev[("fill%d" % i, "entered-go")].set()
    th.join()
print("ERRORS", sorted(errors.items()), "NOTES", sorted(notes.items()), "NOTED", int(sys.version_info >= (3, 11)))
"""


def check_exception_linked_without_slot(ctx):
    """A benchmarking call without an occupant slot reads arguments another
    call's return cleared: its TypeError is linked."""
    res = ctx.run_py(SLOTLESS_RAISE_PROG, options=opts(verbosity=1))
    expect("ERRORS [('tuner', 'TypeError')]" in res.out, "tuner raised TypeError, nobody else", res)
    m = re.search(r"NOTES \[\('tuner', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(2), "a note on it (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 1, "the exit line counts it", res)


# As above, but the call that clears enters after 'tuner' began to
# benchmark ('fast', without a slot too) and returns while nobody begins
# tuning: its entry saw nobody benchmarking in a slot, and its return is
# checked only because sessions without a slot are inside.  Broken, tuner's
# TypeError has no note and is not counted.
SLOTLESS_LATE_CLEAR_PROG = SLOTLESS_RAISE_PROG.replace("""ev[("fill0", "entered-go")].set()
fillers[0].join()
""", """fast = start("fast", "fast")
ev[("fast", "entered-go")].set()
fast.join()
""")


def check_exception_linked_without_slot_late_clear(ctx):
    """A call entering while a benchmarking call without a slot is inside
    returns and clears its arguments: that call's TypeError is linked."""
    res = ctx.run_py(SLOTLESS_LATE_CLEAR_PROG, options=opts(verbosity=1))
    expect("ERRORS [('tuner', 'TypeError')]" in res.out, "tuner raised TypeError, nobody else", res)
    m = re.search(r"NOTES \[\('tuner', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(2), "a note on it (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 1, "the exit line counts it", res)


# The thread a race at entry names leaves while the entering thread waits
# for the report lock: 't1' and 't2' benchmark in tuner A (both entered
# while nobody benchmarked), 'holder' holds the report lock (its race on
# tuner B reads its name, which parks), 'fast' enters A (a race with t1)
# and waits for the lock; t1 leaves by an exception of its own (no clear,
# no check); the lock is released; fast returns and clears the arguments
# (nobody began tuning meanwhile: no check at its return); t2 reads them:
# TypeError (b1's too: holder's return clears B's).  Broken (the race
# dropped because t1 left), t2's TypeError has no note and is not counted.
# A run() without a finally, as Triton's.
LEFT_WHILE_REPORTING_PROG = r"""
import collections
from cleartuner import ClearTuner
sys.setswitchinterval(1000.0)  # the GIL changes hands only where a thread blocks
errors, notes = {}, {}
ev = collections.defaultdict(threading.Event)
raise_at = set()
def gate(tag, phase):  # parks each thread, by name, where main says
    me = threading.current_thread()._name
    ev[(me, phase)].set()
    ev[(me, phase + "-go")].wait(20)
    if (me, phase) in raise_at:
        raise RuntimeError(me + ": its own error")
class Tuner(ClearTuner):
    def run(self, tag):
        self.nargs = {"tag": tag}
        self.gate(tag, "entered")
        ret = tag if tag == "fast" else self._bench(tag)
        self.nargs = None
        return ret
class NamedThread(threading.Thread):
    park = False
    @property
    def name(self):
        if self.park:
            self.park = False
            ev[("holder", "name")].set()
            ev[("holder", "name-go")].wait(20)
        return self._name
    @name.setter
    def name(self, value):
        self._name = value
a, b = Tuner(gate), Tuner(gate)
def call(tuner, tag):
    try:
        tuner.run(tag)
    except BaseException as e:
        name = threading.current_thread()._name
        errors[name] = type(e).__name__
        notes[name] = len([n for n in getattr(e, "__notes__", []) if n.startswith("tunerguard:")])
def start(name, tuner, tag, cls=threading.Thread):
    th = cls(target=call, args=(tuner, tag), name=name)
    th.start()
    return th
t1, t2 = start("t1", a, "t1"), start("t2", a, "t2")
for name in ("t1", "t2"):
    assert ev[(name, "entered")].wait(20), name
for name in ("t1", "t2"):
    ev[(name, "entered-go")].set()
    assert ev[(name, "bench")].wait(20), name
b1 = start("b1", b, "b1")
assert ev[("b1", "entered")].wait(20)
ev[("b1", "entered-go")].set()
assert ev[("b1", "bench")].wait(20)
NamedThread.park = True
ev[("holder", "entered-go")].set()
holder = start("holder", b, "fast", NamedThread)
assert ev[("holder", "name")].wait(20), "holder's report reading its name"
ev[("fast", "entered-go")].set()
fast = start("fast", a, "fast")  # runs until it waits for the report lock
raise_at.add(("t1", "bench"))
ev[("t1", "bench-go")].set()
t1.join()
ev[("holder", "name-go")].set()
fast.join()
ev[("t2", "bench-go")].set()
t2.join()
ev[("b1", "bench-go")].set()
b1.join()
holder.join()
print("ERRORS", sorted(errors.items()), "NOTES", sorted(notes.items()), "NOTED", int(sys.version_info >= (3, 11)))
"""


def check_exception_linked_when_reported_one_left(ctx):
    """A race at entry whose benchmarking thread left while the report lock
    was awaited is the race of another still benchmarking: that one's
    TypeError is linked."""
    res = ctx.run_py(LEFT_WHILE_REPORTING_PROG, options=opts())
    expect("ERRORS [('b1', 'TypeError'), ('t1', 'RuntimeError'), ('t2', 'TypeError')]" in res.out,
           "t1 its own error, t2 TypeError (and b1, whose arguments holder cleared)", res)
    m = re.search(r"NOTES \[\('b1', (\d)\), \('t1', 0\), \('t2', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(3) and m.group(2) == m.group(3), "a note on t2's and b1's (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 2, "the exit line counts both", res)


def check_exit_line_tuner_without_kernel_name(ctx):
    """serialize, a tuner whose function has no __name__: the exit line names
    the contended tuner by its method, never '?'."""
    prog = RACE_PROG.replace("Autotuner(my_kernel)", "Autotuner(functools.partial(my_kernel))")
    res = ctx.run_py("    import functools\n" + prog % {"serialize": True}, options=opts(mode="serialize"))
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    line = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard: ")]
    expect(line and "(contended: Autotuner.run)" in line[-1], "the method named", res)
    expect("?" not in line[-1], "no '?' on the exit line", res)


def check_exit_line_many_contended(ctx):
    """serialize, five kernels with long names each made a thread wait: the
    exit line names the first three whole and counts the rest; no name is
    cut short.  Broken (names joined until the buffer ends), the fourth and
    fifth names are missing without a count, or one is cut."""
    names = ["contended_kernel_%d_%s" % (i, "x" * 60) for i in range(5)]
    prog = "    import types\n    keep = []\n"  # alive: a tuner is known by its address
    for n in names:
        prog += ("    keep.append(Autotuner(types.FunctionType(my_kernel.__code__, globals(), %r)))\n"
                 "    race_once(keep[-1], serialize=True)\n" % n)
    res = ctx.run_py("    from triton.runtime.autotuner import Autotuner\n" + prog + "    print('DONE')\n",
                     options=opts(mode="serialize"))
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    line = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard: ")]
    m = re.search(r"\(contended: (.*?)\)", line[-1] if line else "")
    expect(m, "a contended list", res)
    expect(m.group(1) == ", ".join(names[:3]) + " and 2 more", "three names whole, then the count", res)


CHECKS = {
    "nonpython": [check_nonpython],
    "silent": [check_silent_python, check_silent_exec_at_finalization, check_silent_python_default_log_path],
    "options": [check_bad_options, check_control_bytes_escaped, check_unterminated_quote, check_quoted_log_path, check_help],
    "race": [check_race_detect, check_two_inside_sites_two_reports, check_race_third_entrant, check_race_deep_nesting, check_race_very_deep_stack, check_race_after_warmup,
             check_race_hot_loop, check_race_interrupt_in_lookup, check_race_interrupt_in_wait_hook,
             check_race_interrupt_in_wait_report,
             check_race_serialize, check_race_off,
             check_race_log_stderr],
    "import_order": [check_import_lazy_in_thread, check_import_importlib, check_import_module_run_again, check_import_namespace_package,
                     check_import_finder_before_ours, check_import_leaves_loader_as_it_was, check_subclass_race,
                     check_subclass_nested_single_thread],
    "replace": [check_replaced_method, check_replaced_copy_before_first_call, check_setattr_paths,
                check_replaced_method_late_alternating, check_replaced_method_silent, check_replaced_tuning_method,
                check_replaced_method_patch_restore_loop, check_signature, check_guard_identity,
                check_guard_hot_calls, check_guard_lifetime, check_replaced_same_function_again, check_new_functions_take_freed_slots,
                check_descriptor_guard_keeps_class_semantics, check_targets_unguarded, check_targets_deferred_body,
                check_targets_module_run_with_dash_m,
                check_declared_repeats_keep_refcounts, check_metaclass_new_returns_other,
                check_replaced_by_async_said_once,
                check_target_class_refuses_setattr, check_target_builtin_in_class_body, check_target_non_ascii],
    "exit": [check_exitcode, check_halt_on_race, check_prevented_is_race, check_exit_with_audit_hook_and_open_file],
    "log_path": [check_log_path_missing_dir],
    "dedup": [check_repeat_reported_once, check_verbosity2_writes_every_occurrence, check_distinct_races_reported,
              check_distinct_call_sites_reported, check_new_tuner_every_call_is_one_bug, check_report_cap,
              check_non_utf8_folder_escaped],
    "fork": [check_fork, check_fork_child_after_race],
    "copies": [check_two_copies_detect, check_two_copies_serialize],
    "files": [check_planted_symlinks, check_log_path_through_planted_link, check_fifo_at_report_path, check_fifo_as_suppressions, check_rank_one_rule,
              check_chdir_after_start, check_same_pid_twice],
    "descriptors": [check_program_fds_untouched, check_stderr_closed_at_start, check_stderr_taken_by_program_file,
                    check_stderr_file_then_another_file_same_fs,
                    check_stderr_pipe_broken_or_full, check_stderr_capture_by_test_runner, check_group_writable_folder,
                    check_full_disk],
    "run_shapes": [check_run_shape_guarded, check_run_shape_said, check_run_shape_instance_guarded],
    "exc_link": [check_exception_own_keyerror_not_linked, check_exception_keyboard_interrupt_not_linked,
                 check_exception_every_linked_one_counted, check_exit_line_tuner_without_kernel_name, check_exit_line_many_contended,
                 check_exit_line_one_count_per_call, check_exit_line_counts_wait_in_progress,
                 check_exception_linked_past_occupant_slots, check_exception_linked_by_slotless_return,
                 check_exception_linked_for_every_benchmarking_call, check_exception_linked_without_slot,
                 check_exception_linked_without_slot_late_clear, check_exception_linked_when_reported_one_left,
                 check_exception_every_cleared_call_linked, check_no_nargs_attribute_not_cleared],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="interpreter path, or 'none' for the nonpython group")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--only", default="", help="comma-separated groups (default: all)")
    ap.add_argument("--keep", action="store_true", help="keep temporary directories")
    a = ap.parse_args()
    groups = [g for g in a.only.split(",") if g] or list(CHECKS)
    for g in groups:
        if g not in CHECKS:
            ap.error("unknown group %s (known: %s)" % (g, ", ".join(CHECKS)))
    if os.environ.get("LD_PRELOAD", "") and "tunerguard" in os.environ["LD_PRELOAD"]:
        print("the driver itself must not run under the preload")
        return 1
    if not os.path.exists(a.lib):
        print("FAIL: %s does not exist" % a.lib)
        return 1
    a.lib = os.path.abspath(a.lib)
    needs_python = any(g != "nonpython" for g in groups)
    if needs_python and not (os.path.isfile(a.python) and os.access(a.python, os.X_OK)):
        print("SKIP: interpreter %s not installed" % a.python)
        return SKIP
    ctx = Ctx(a.python, a.lib, a.keep)
    label = "" if a.python == "none" else " [%s]" % a.python
    failed = 0
    for g in groups:
        for check in CHECKS[g]:
            name = "%s/%s" % (g, check.__name__[len("check_"):])
            try:
                check(ctx)
                print("PASS %s%s" % (name, label), flush=True)
            except Fail as e:
                failed += 1
                print("FAIL %s%s: %s" % (name, label, e), flush=True)
    ctx.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
