"""What a program (or a plugin) can ask about tunerguard in its own process.

    tunerguard.active()         True when libtunerguard.so is loaded here and its mode is not off
    tunerguard.mode()           "detect", "serialize", "off", or None when the library is not loaded
    tunerguard.options()        the TUNERGUARD_OPTIONS the library read at start, as a dict (later keys win)
    tunerguard.log_path()       the report prefix in force (absolute), or "stderr"
    tunerguard.report_files()   the JSON Lines report files this process wrote so far
    tunerguard.reports()        their records (docs/report-schema.md), oldest first
    tunerguard.ReportReader     the same, read incrementally: .new_records() gives what came since
    tunerguard.text_summary(r)  the text report's "In short", "What it does" and "What to do" lines of record r
    tunerguard.clear_tuner_caches()  empty the in-memory caches of Triton's tuners (cold keys again)

The library writes each report with write(2) the moment the race is seen
(before the racing call goes on), so a record is readable from any thread as
soon as the call that raced is back.  Everything here reads files; nothing
loads or calls the library.  The library reads its options once, from the
environment the process started with (/proc/self/environ), so later changes
to os.environ change nothing here either.
"""
import gc
import glob
import json
import os
import re
import sys

_LIB_NAMES = ("libtunerguard.so", "libtunerguard_core.so")
_MODES = ("off", "detect", "serialize")
_SEP = ":\t\n\r "


def loaded_library():
    """Path of the libtunerguard.so mapped into this process, or None."""
    try:
        with open("/proc/self/maps", "r", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[5:] or [""]
                if os.path.basename(path[0].replace(" (deleted)", "")) == _LIB_NAMES[0]:
                    return path[0]
    except OSError:
        return None
    return None


def _start_environ():
    """The environment this process started with ({} when unreadable)."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return dict(os.environ)
    out = {}
    for item in raw.split(b"\0"):
        k, eq, v = item.partition(b"=")
        if eq:
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out


def parse_options(text):
    """TUNERGUARD_OPTIONS as the library reads it (core/options.c): key=value
    pairs separated by ':' or whitespace, a value quoted with ' or " may hold
    both; a later key wins.  Returns a dict; raises ValueError on a malformed
    pair.  (The targets= value's own ':' rule is not needed here: its pairs
    are kept, whatever they split into.)"""
    out, i, n = {}, 0, len(text)
    while i < n:
        if text[i] in _SEP:
            i += 1
            continue
        eq = text.find("=", i)
        stop = min([j for j in (text.find(c, i) for c in _SEP) if j >= 0] or [n])
        if eq < 0 or eq > stop:
            raise ValueError("malformed option %r in TUNERGUARD_OPTIONS (expected key=value pairs separated by ':')"
                             % text[i:stop])
        key, i = text[i:eq], eq + 1
        if i < n and text[i] in "'\"":
            close = text.find(text[i], i + 1)
            if close < 0:
                raise ValueError("unterminated quote in TUNERGUARD_OPTIONS value of %r" % key)
            out[key], i = text[i + 1:close], close + 1
        else:
            j = i
            while j < n and text[j] not in _SEP:
                j += 1
            out[key], i = text[i:j], j
    return out


def quote_option(value):
    """VALUE as a TUNERGUARD_OPTIONS value (quoted when it holds ':' or whitespace)."""
    if value and not any(c in value for c in _SEP) and value[0] not in "'\"":
        return value
    if "'" not in value:
        return "'%s'" % value
    if '"' not in value:
        return '"%s"' % value
    raise ValueError("a TUNERGUARD_OPTIONS value cannot hold both quote kinds: %r" % value)


def options():
    """The options the library of this process read at start (a dict; {} when
    the library is not loaded or the variable is malformed)."""
    if not loaded_library():
        return {}
    try:
        return parse_options(_start_environ().get("TUNERGUARD_OPTIONS", ""))
    except ValueError:
        return {}


def mode():
    """"detect", "serialize" or "off" for the library loaded here; None when
    none is loaded."""
    if not loaded_library():
        return None
    m = options().get("mode", "detect")
    return m if m in _MODES else "detect"


def active():
    """True when libtunerguard.so is loaded in this process in detect or serialize mode."""
    return mode() in ("detect", "serialize")


def log_path():
    """The report prefix in force: absolute (the library makes a relative one
    absolute against the directory the process started in), or "stderr";
    None when the library is not loaded."""
    if not loaded_library():
        return None
    path = options().get("log_path") or "tunerguard"
    if path == "stderr" or os.path.isabs(path):
        return path
    # Linux keeps no record of the start directory: the one this module was
    # first imported in stands for it (`pytest --tunerguard` and `tunerguard
    # run` always pass an absolute log_path).
    return os.path.join(_START_CWD, path)


_START_CWD = os.getcwd()


def _report_glob(prefix, pid):
    return [prefix + ".%d.jsonl" % pid, prefix + ".%d.*.jsonl" % pid,
            prefix + ".rank*.%d.jsonl" % pid, prefix + ".rank*.%d.*.jsonl" % pid]


_NAME_RE = re.compile(r"\.(rank\d+\.)?(\d+)(\.\d+)?\.jsonl$")


def report_files(prefix=None, pid=None):
    """The JSON Lines files process PID (this one) wrote under PREFIX (the
    log_path in force), sorted; [] when none or with log_path=stderr."""
    prefix = prefix or log_path()
    pid = os.getpid() if pid is None else pid
    if not prefix or prefix == "stderr":
        return []
    found = set()
    for pattern in _report_glob(glob.escape(prefix), pid):
        for path in glob.glob(pattern):
            m = _NAME_RE.search(path[len(prefix):])
            if m and int(m.group(2)) == pid:
                found.add(path)
    return sorted(found)


class ReportReader:
    """Reads the records of this process's report files as they are written.

    new_records() returns the complete lines added since the last call (a
    line still being written, without its newline, waits for the next call),
    each parsed and given "_file", the path it came from, and "_index", its
    line number there from 0 (the text report beside it, `.txt`, holds one
    block per line, in the same order).  Records of another
    pid (a forked child that kept the file) are skipped.  Not thread-safe:
    one reader per consumer."""

    def __init__(self, prefix=None, pid=None):
        self.prefix = prefix
        self.pid = pid
        self._offsets = {}
        self._lines = {}

    def new_records(self):
        pid = os.getpid() if self.pid is None else self.pid
        out = []
        for path in report_files(self.prefix, pid):
            start = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            self._offsets[path] = start + end
            for line in data[:end].splitlines():
                index = self._lines.get(path, 0)
                self._lines[path] = index + 1
                try:
                    rec = json.loads(line.decode("utf-8", errors="replace"))
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("pid") == pid:
                    rec["_file"], rec["_index"] = path, index
                    out.append(rec)
        return out


def reports(prefix=None, pid=None):
    """Every record this process's report files hold so far, oldest first."""
    return ReportReader(prefix, pid).new_records()


_SUMMARY_KEYS = ("  In short: ", "  What it does: ", "  What to do: ")


def _text_blocks(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    return [b for b in re.split(r"(?m)^=+\n", text) if b.strip()]


def text_summary(record):
    """The lines of the text report (the .txt beside the record's file) that
    open the record's report: "In short" (with its continuation lines), "What it
    does", "What to do" and the SUMMARY line; None when the text has no such
    block (a record kind without them, or the file is gone)."""
    path = record.get("_file", "")
    if not path.endswith(".jsonl"):
        return None
    entering = record.get("entering") or {}
    kernel = (record.get("tuner") or {}).get("kernel")
    want_tid = "(tid=%s)" % entering.get("tid")
    blocks = _text_blocks(path[:-len(".jsonl")] + ".txt")
    index = record.get("_index")
    if isinstance(index, int) and index < len(blocks):
        blocks = [blocks[index]] + blocks  # its own block first: one block per record, in order
    for block in blocks:
        if want_tid not in block or (kernel and "'%s'" % kernel not in block):
            continue
        lines, keep, taking = block.splitlines(), [], False
        for line in lines:
            if line.startswith("WARNING: tunerguard: ") or line.startswith("SUMMARY: tunerguard: "):
                keep.append(line)
                taking = False
            elif line.startswith(_SUMMARY_KEYS):
                keep.append(line)
                taking = True
            elif taking and line.startswith("    "):
                keep.append(line)
            else:
                taking = False
        if any(line.startswith("  In short: ") for line in keep):
            return "\n".join(keep)
    return None


def clear_tuner_caches():
    """Empty the tuned-config cache (`cache`, and `configs_timings` where kept)
    of every Triton Autotuner (subclasses included: the ones tunerguard
    guards) that exists in this process, so the next call of each kernel tunes
    again.  Triton not imported: nothing to do.  Returns how many tuners were
    cleared.  Walks the garbage collector's objects: for a test's set-up, not
    for a hot path."""
    mod = sys.modules.get("triton.runtime.autotuner")
    base = getattr(mod, "Autotuner", None)
    if base is None:
        return 0
    n = 0
    for obj in gc.get_objects():
        if isinstance(obj, base) and isinstance(getattr(obj, "cache", None), dict):
            obj.cache.clear()
            if getattr(obj, "configs_timings", None) is not None:
                obj.configs_timings = None
            n += 1
    return n
