"""What every integration check shares: running a child with the preload
and TUNERGUARD_OPTIONS in its environment only (and Python's debug allocator
hooks, PYTHONMALLOC=debug, unless the environment names an allocator: memory
tunerguard reads after CPython freed it is overwritten at once, so such a read
fails the check), each in a fresh temporary directory; the prelude every
program runs after; reading the reports a child wrote.

A program is a file under cases/<group>/ (read_program) or a string its
group's checks.py builds; run_py writes it, after PRELUDE, to prog.py in the
child's directory.  Overlaps are forced with threading.Event and, in serialize
mode, with an audit hook on "tunerguard.serialize_wait": no sleeps.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
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
    def __init__(self, python, lib, keep, regime=None, fakecuda=None):
        """regime: a tests/free_threaded/regime.py Regime, applied to every child's environment.
        fakecuda: the directory of the stand-in libcuda.so.1 (tests/fakecuda), or None."""
        self.python, self.lib, self.keep, self.regime = python, lib, keep, regime
        self.fakecuda = fakecuda
        self.tmps = []

    def without_gil(self):
        """The children run with the GIL off (a free-threaded interpreter,
        --gil-regime nogil): overlaps of Triton's Autotuner calls on tuned
        keys are races there (docs/free-threading.md)."""
        return bool(self.regime and self.regime.name == "nogil")

    def fakecuda_env(self):
        """The environment that makes the stand-in libcuda.so.1 the one a
        program's ctypes.CDLL("libcuda.so.1") loads; a Fail without it."""
        if not self.fakecuda or not os.path.exists(os.path.join(self.fakecuda, "libcuda.so.1")):
            raise Fail("needs the stand-in libcuda (run_all.py --fakecuda DIR), not given")
        return {"LD_LIBRARY_PATH": self.fakecuda}

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
        if self.regime:
            self.regime.apply(env)
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
    import ctypes, sysconfig
    off = ctypes.c_ssize_t.from_address(id(type(f)) + (5 + (4 if sysconfig.get_config_var('Py_GIL_DISABLED') else 2))
                                    * ctypes.sizeof(ctypes.c_void_p)).value  # after a 2- or 4-word header
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


def read_program(checks_file, name, **params):
    """The text of cases/<group>/<name>.py, beside checks_file, each
    parameter's name in capitals (a placeholder there) replaced by str() of
    its value."""
    with open(os.path.join(os.path.dirname(os.path.abspath(checks_file)), name + ".py")) as f:
        text = f.read()
    for key, value in params.items():
        text, n = re.subn(r"\b%s\b" % key.upper(), lambda m: str(value), text)
        assert n, "%s.py has no placeholder %s" % (name, key.upper())
    return text


# Programs more than one group runs.
PRINT_RAN = 'print("PROGRAM RAN")\n'

# Two threads in Triton's Autotuner, the second entering while the first is
# inside; serialize: whether the main thread waits (serialize mode).
def race_prog(serialize):
    text = read_program(os.path.join(HERE, "cases", "checks.py"), "shared_race", serialize=serialize)
    return "\n" + text.split("\n", 1)[1]  # the first line, a comment, left blank
