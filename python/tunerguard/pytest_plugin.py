"""pytest plugin (entry point pytest11 "tunerguard"): races pinned to tests.

    pytest --tunerguard                 detect: a test that raced fails with the report
    pytest --tunerguard=serialize       the second thread waits: no race, tests pass
    [pytest] tunerguard = detect        the same from the ini file

Inactive unless asked (the option, the ini key, or a library already preloaded
by `tunerguard run`/LD_PRELOAD, whose TUNERGUARD_OPTIONS then give the mode).
When the library is not loaded, pytest starts again under it (os.execve of the
same interpreter and arguments, LD_PRELOAD and TUNERGUARD_OPTIONS added; the
terminal, the process and so its exit status stay pytest's); the environment
marker TUNERGUARD_PYTEST_REEXEC stops a second try.  After each test phase the
records the library wrote meanwhile (written before the racing call goes on, so
every thread of the test, pytest-run-parallel's included, has written its own)
are read and pinned to the test.  docs/pytest.md says the rest.
"""
import os
import sys
import time

import pytest

from tunerguard import lib_path, runtime

REEXEC_MARK = "TUNERGUARD_PYTEST_REEXEC"
MARKER = "tunerguard_known_race"
MODES = ("detect", "serialize", "off")
# Records that fail the run by exitcode='s rule (README): a race a serialize
# wait did not prevent, an exception linked to one, a deadlock, a thread that
# died inside a tuner, a wait past wait_timeout, a fatal signal.
FAILING_KINDS = ("race", "exception", "deadlock", "holder_died", "wait_timeout", "fatal")


def pytest_addoption(parser):
    group = parser.getgroup("tunerguard", "tunerguard: threads racing inside Triton's autotuner")
    group.addoption("--tunerguard", nargs="?", const="", default=None, metavar="MODE",
                    choices=("",) + MODES, dest="tunerguard",
                    help="run under tunerguard: detect (default: a test that raced fails with the "
                         "report), serialize (the second thread waits) or off")
    group.addoption("--tunerguard-option", action="append", default=[], metavar="KEY=VALUE",
                    dest="tunerguard_options", help="a TUNERGUARD_OPTIONS pair (repeatable)")
    group.addoption("--tunerguard-report-dir", default=None, metavar="DIR", dest="tunerguard_report_dir",
                    help="folder of the report files (default: the invocation directory)")
    parser.addini("tunerguard", "tunerguard mode when --tunerguard is not given: detect, serialize or off",
                  default="")
    parser.addini("tunerguard_options", "TUNERGUARD_OPTIONS pairs, one a line", type="linelist", default=[])
    parser.addini("tunerguard_report_dir", "folder of the report files", default="")


# ---- starting under the library ---------------------------------------------------------

def _requested_mode(config):
    """The mode asked for, "" for "the environment's, else detect", None when not asked."""
    cli = config.getoption("tunerguard")
    if cli is not None:
        return cli
    ini = (config.getini("tunerguard") or "").strip()
    if ini:
        if ini not in MODES:
            raise pytest.UsageError("tunerguard: ini option tunerguard = %r: expected detect, serialize or off" % ini)
        return ini
    return None


def _report_prefix(config):
    folder = config.getoption("tunerguard_report_dir") or config.getini("tunerguard_report_dir")
    folder = os.path.join(str(config.invocation_params.dir), folder) if folder else str(config.invocation_params.dir)
    return os.path.join(os.path.abspath(folder), "tunerguard")


def _child_options(config, mode, environ):
    """TUNERGUARD_OPTIONS for the new process: the environment's, then the ini's and
    the command line's pairs, then mode= and log_path= (a later key wins)."""
    pairs = [environ.get("TUNERGUARD_OPTIONS", "")]
    pairs += list(config.getini("tunerguard_options")) + list(config.getoption("tunerguard_options"))
    for pair in pairs[1:]:
        try:
            runtime.parse_options(pair)
        except ValueError as e:
            raise pytest.UsageError("tunerguard: %s" % e)
    try:
        given = runtime.parse_options(":".join(pairs))
    except ValueError as e:
        raise pytest.UsageError("tunerguard: %s" % e)
    if mode:
        pairs.append("mode=" + mode)
    prefix = given.get("log_path")
    if prefix != "stderr" and (config.getoption("tunerguard_report_dir") or config.getini("tunerguard_report_dir")
                               or not prefix):
        prefix = _report_prefix(config)
    if prefix and prefix != "stderr":
        folder = os.path.dirname(os.path.join(str(config.invocation_params.dir), prefix))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise pytest.UsageError("tunerguard: cannot create the report folder %s: %s" % (folder, e.strerror))
        pairs.append("log_path=" + runtime.quote_option(os.path.join(str(config.invocation_params.dir), prefix)))
    return ":".join(p for p in pairs if p)


def _process_argv():
    """This process's argv as the kernel has it (the interpreter's flags and -m included)."""
    with open("/proc/self/cmdline", "rb") as f:
        raw = f.read()
    return [os.fsdecode(a) for a in raw.split(b"\0")[:-1]]


def _restart_under_library(config, mode):
    """Replace this process by the same command under the library; return a
    line saying why not when it cannot be done."""
    if os.environ.get(REEXEC_MARK):
        return ("pytest was started again under %s but the library is not loaded "
                "(ld.so refused the preload?); running without tunerguard" % os.environ[REEXEC_MARK])
    if tuple(config.invocation_params.args) != tuple(sys.argv[1:]):
        return ("pytest was called from a program (pytest.main), which tunerguard cannot start again: "
                "run that program with `tunerguard run -- ...`; running without tunerguard")
    try:
        lib = os.environ.get("TUNERGUARD_LIB") or lib_path()
        argv = _process_argv()
    except (OSError, FileNotFoundError) as e:
        return "%s; running without tunerguard" % e
    env = dict(os.environ)
    env["TUNERGUARD_OPTIONS"] = _child_options(config, mode, env)
    env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env[REEXEC_MARK] = lib
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable] + argv[1:], env)
    return None  # not reached


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    want = _requested_mode(config)
    if want is None or want == "off" or runtime.loaded_library():
        return None
    if hasattr(config, "workerinput"):  # an xdist worker: its controller decides
        return None
    why = _restart_under_library(config, want)
    config._tunerguard_warning = why
    return None


# ---- the session's state ------------------------------------------------------------------

class _State:
    def __init__(self, config):
        self.config = config
        self.mode = runtime.mode()
        self.reader = runtime.ReportReader()
        self.started = time.time()
        self.prefix = runtime.log_path()
        self.raced = {}      # nodeid -> [(kernel, file, known)]
        self.per_kernel = {}  # kernel -> count of failing races
        self.prevented = 0
        self.outside = []    # (kernel or kind, file) of failing records outside any test
        self.worker_files = set()

    def take(self):
        return self.reader.new_records()


def _fails(rec):
    kind = rec.get("kind")
    if kind not in FAILING_KINDS:
        return False
    if kind == "race":
        if rec.get("serialized"):
            return runtime.options().get("prevented_is_race") == "1"
        return rec.get("severity") != "low"
    return True


def _property(item, name, value):
    """A user property (JUnit XML <property>), once."""
    if (name, value) not in item.user_properties:
        item.user_properties.append((name, value))


def _kernel(rec):
    return (rec.get("tuner") or {}).get("kernel") or rec.get("kind", "?")


def _thread_word(t):
    if not t:
        return "?"
    return "'%s' (tid=%s)" % (t.get("name"), t.get("tid"))


def failure_text(rec):
    """The report's summary for a test's failure text, and the file it is in."""
    path = rec.get("_file", "")
    txt = path[:-len(".jsonl")] + ".txt" if path.endswith(".jsonl") else path
    if rec.get("kind") == "exception":
        exc = rec.get("exception") or {}
        what = rec.get("detail") or "%s: %s, raised in a call that raced with thread %s on kernel '%s'" % (
            exc.get("type"), exc.get("message"), _thread_word(rec.get("inside")), _kernel(rec))
        return "tunerguard: %s (%s)" % (what, txt)
    head = runtime.text_summary(rec)
    if not head:
        detail = rec.get("detail")
        if rec.get("kind") == "race":
            detail = "thread %s entered the tuner of kernel '%s' while thread %s was inside it" % (
                _thread_word(rec.get("entering")), _kernel(rec), _thread_word(rec.get("inside")))
        head = "tunerguard: %s on '%s': %s" % (rec.get("kind"), _kernel(rec), detail or "")
    return "%s\n  Report: %s (records: %s)" % (head, txt, os.path.basename(path))


def pytest_configure(config):
    config.addinivalue_line("markers", "%s(reason): the test is known to race in a Triton tuner: "
                            "tunerguard reports the race but does not fail the test" % MARKER)
    want = _requested_mode(config)
    loaded = runtime.loaded_library()
    if not loaded or runtime.mode() == "off":
        why = getattr(config, "_tunerguard_warning", None)
        if why and want not in (None, "off"):
            config.issue_config_time_warning(pytest.PytestConfigWarning("tunerguard: " + why), stacklevel=2)
        return
    if want and want != runtime.mode():
        raise pytest.UsageError("tunerguard: --tunerguard=%s, but the library this process runs under is in mode %s "
                                "(TUNERGUARD_OPTIONS)" % (want, runtime.mode()))
    config._tunerguard = _State(config)
    config.pluginmanager.register(_Recorder(config._tunerguard), "tunerguard-recorder")


def pytest_report_header(config):
    state = getattr(config, "_tunerguard", None)
    if state is not None:
        return "tunerguard: mode=%s, library %s, reports %s.<pid>.*" % (state.mode, runtime.loaded_library(),
                                                                       state.prefix)
    return None


class _Recorder:
    """The hooks that run only while the library is loaded and active."""

    def __init__(self, state):
        self.state = state

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        state = self.state
        known = item.get_closest_marker(MARKER) is not None
        texts = []
        for rec in state.take():
            if rec.get("kind") == "race" and rec.get("serialized"):
                item.user_properties.append(("tunerguard_prevented", _kernel(rec)))
            if not _fails(rec):
                continue
            path = rec.get("_file", "")
            _property(item, "tunerguard_kernel", _kernel(rec))
            _property(item, "tunerguard_report", path[:-len(".jsonl")] + ".txt" if path.endswith(".jsonl") else path)
            if rec.get("kind") != "exception":  # an exception follows a race counted already
                item.user_properties.append(("tunerguard_race", _kernel(rec)))
            if known:
                _property(item, "tunerguard_known_race", _kernel(rec))
                continue
            texts.append(failure_text(rec))
        rep.user_properties = list(item.user_properties)
        if not texts:
            return
        text = "tunerguard: this test raced in a Triton tuner\n\n" + "\n\n".join(texts)
        if rep.outcome == "failed":
            rep.sections.append(("tunerguard", text))
        else:
            rep.outcome = "failed"
            rep.longrepr = text
            if hasattr(rep, "wasxfail"):
                del rep.wasxfail

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection_finish(self, session):
        yield
        self._outside(self.state.take())

    def _outside(self, recs):
        for rec in recs:
            if rec.get("kind") == "race" and rec.get("serialized"):
                self.state.prevented += 1
            elif _fails(rec) and rec.get("kind") != "exception":
                self.state.outside.append((_kernel(rec), rec.get("_file", "")))
                self.state.per_kernel[_kernel(rec)] = self.state.per_kernel.get(_kernel(rec), 0) + 1

    def pytest_runtest_logreport(self, report):
        """Every process's test reports, xdist workers' too (here in the controller)."""
        if report.when != "teardown":
            return
        props = report.user_properties
        self.state.prevented += sum(1 for k, _ in props if k == "tunerguard_prevented")
        kernels = [v for k, v in props if k == "tunerguard_kernel"]
        known = {v for k, v in props if k == "tunerguard_known_race"}
        if kernels:
            self.state.raced[report.nodeid] = [(k, k in known) for k in kernels]
        for k in (v for k, v in props if k == "tunerguard_race"):
            self.state.per_kernel[k] = self.state.per_kernel.get(k, 0) + 1

    def pytest_sessionfinish(self, session):
        self._outside(self.state.take())
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: hand its outside-test records over
            workeroutput["tunerguard_outside"] = list(self.state.outside)
            workeroutput["tunerguard_prevented_outside"] = self.state.prevented

    def pytest_testnodedown(self, node, error):
        out = getattr(node, "workeroutput", None) or {}
        for kernel, path in out.get("tunerguard_outside", []):
            self.state.outside.append((kernel, path))
            self.state.per_kernel[kernel] = self.state.per_kernel.get(kernel, 0) + 1
        self.state.prevented += out.get("tunerguard_prevented_outside", 0)

    def pytest_terminal_summary(self, terminalreporter):
        if hasattr(terminalreporter.config, "workerinput"):
            return
        state, tr = self.state, terminalreporter
        tr.write_sep("=", "tunerguard summary (mode=%s)" % state.mode)
        if not state.per_kernel:
            tr.write_line("no races%s" % (" (%d prevented by serialize)" % state.prevented if state.prevented else ""))
        else:
            for kernel, n in sorted(state.per_kernel.items()):
                tr.write_line("races on kernel '%s': %d" % (kernel, n))
            if state.prevented:
                tr.write_line("prevented by serialize: %d" % state.prevented)
        for nodeid, races in sorted(state.raced.items()):
            kernels = ", ".join(sorted({"'%s'" % k for k, _ in races}))
            word = "known to race (marker), not failed" if all(kn for _, kn in races) else "FAILED by tunerguard"
            tr.write_line("raced: %s on %s: %s" % (nodeid, kernels, word))
        for kernel, path in state.outside:
            tr.write_line("raced outside any test: '%s' (%s)" % (kernel, path))
        for path in _files_since(state.prefix, state.started):
            tr.write_line("report file: %s" % path)


def _files_since(prefix, since):
    """The report files under PREFIX (every process's) created or changed since SINCE."""
    if not prefix or prefix == "stderr":
        return []
    folder, base = os.path.split(prefix)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for name in sorted(names):
        if not name.startswith(base + ".") or not name.endswith((".txt", ".jsonl")):
            continue
        path = os.path.join(folder, name)
        try:
            if os.stat(path).st_mtime >= since - 1:
                out.append(path)
        except OSError:
            pass
    return out


# ---- cold caches ----------------------------------------------------------------------------

@pytest.fixture
def tunerguard_cold_cache(tmp_path_factory):
    """A fresh, empty Triton cache folder (TRITON_CACHE_DIR) for the test, and the
    in-memory caches of every tuner that exists emptied (runtime.clear_tuner_caches):
    the race lives on keys not tuned yet, which a warm suite never has.  Yields the
    folder; TRITON_CACHE_DIR is put back afterwards.  Uses no monkeypatch, so
    pytest-run-parallel still runs the test in its threads."""
    folder = tmp_path_factory.mktemp("triton-cache")
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(folder)
    runtime.clear_tuner_caches()
    try:
        yield folder
    finally:
        if old is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = old
