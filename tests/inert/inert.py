#!/usr/bin/env python3
"""A Python process that imports no target is left as it was.

  inert.py --python EXE --lib LIB [--model DIR] [--also-mapped SONAME ...]

Runs one probe program in the interpreter with and without LD_PRELOAD=LIB and
compares what a program can see: the modules imported at start-up (in the
interpreter itself and in a fresh venv, where test_site.test_startup_imports
looks), the open file descriptors, the shared objects mapped (only
libtunerguard.so itself may be added, and each --also-mapped SONAME it
needs: no libunwind, libdw or libgcc_s before a target is imported) and
sys.meta_path.  Then a target module (the Triton model, --model) is imported
through importlib.import_module (no "import" audit event): its class must be
guarded, tunerguard's finder first in sys.meta_path (an ordinary finder:
hashable, a repr naming tunerguard, find_spec returning None for a module
that is not a target, invalidate_caches), and only then libunwind mapped.  Under Python's debug allocators (PYTHONMALLOC=debug,
-X dev, PYTHONDEVMODE) the preloaded process exits as the plain one does.
Exit 0 when every check holds, 1 otherwise, 77 when
the interpreter is missing."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

PROBE = r"""
import sys
modules = sorted(sys.modules)  # before the probe's own imports
import json, os
def libs():
    out = set()
    for line in open('/proc/self/maps'):
        f = line.split()
        if len(f) >= 6 and '.so' in f[-1]:
            out.add(os.path.basename(f[-1]))
    return sorted(out)
fds = sorted(int(x) for x in os.listdir('/proc/self/fd'))  # the listing's own fd included, both ways
res = {'modules': modules, 'fds': fds, 'libs': libs(),
       'meta_path': [type(f).__module__ + '.' + type(f).__qualname__ for f in sys.meta_path]}
def finder():
    f = sys.meta_path[0]
    if type(f).__module__ == 'tunerguard':
        res['finder'] = {'hash': isinstance(hash(f), int), 'repr': repr(f),
                         'unique': len(set(sys.meta_path)) == len(sys.meta_path),
                         'find_spec_other': repr(f.find_spec('json', None)),
                         'find_spec_kw': repr(f.find_spec('json', path=None, target=None)),
                         'invalidate': repr(f.invalidate_caches())}
if len(sys.argv) > 1:
    before = res['libs']
    import importlib
    at = importlib.import_module('triton.runtime.autotuner')  # no "import" event: the package's "exec" tells
    res['libs_after_target'] = sorted(set(libs()) - set(before))
    res['meta_path_after_target'] = [type(f).__module__ + '.' + type(f).__qualname__ for f in sys.meta_path]
    finder()
    import ctypes, sysconfig
    # the object header: 2 words with a GIL, 4 in a free-threaded build; tp_vectorcall_offset 5 after it
    words = (4 if sysconfig.get_config_var('Py_GIL_DISABLED') else 2) + 5
    def vectorcall_of(fn):  # a guard is in the function's vectorcall slot, or (3.11) a descriptor
        off = ctypes.c_ssize_t.from_address(id(type(fn)) + words * ctypes.sizeof(ctypes.c_void_p)).value
        return ctypes.c_void_p.from_address(id(fn) + off).value
    run = at.Autotuner.__dict__['run']
    res['guarded'] = type(run).__name__ != 'function' or vectorcall_of(run) != vectorcall_of(vectorcall_of)
print(json.dumps(res))
"""


def run(python, lib, *argv, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONPATH", "TUNERGUARD_OPTIONS")}
    env.update(env_extra or {})
    if lib:
        env["LD_PRELOAD"] = lib
    p = subprocess.run([python, "-c", PROBE, *argv], env=env, capture_output=True, text=True, timeout=120,
                       cwd=tempfile.gettempdir())
    if p.returncode != 0 or p.stderr:
        raise SystemExit(f"inert: probe failed ({'preloaded' if lib else 'plain'}), status {p.returncode}:\n"
                         f"{p.stderr}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--model", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "repro",
                                                     "model"))
    # A library built against an older glibc (tools/bullseye_wheel.sh) needs
    # libdl.so.2 and libpthread.so.0, which an interpreter built on glibc
    # 2.34+ does not map (there they are empty: their functions are in libc).
    ap.add_argument("--also-mapped", action="append", default=[], metavar="SONAME",
                    help="a shared object the library needs that may be mapped besides it")
    a = ap.parse_args()
    if not os.path.exists(a.python):
        print(f"inert: {a.python} not installed; skipped")
        return 77
    lib = os.path.abspath(a.lib)
    failures = []

    def check(what, ok, detail=""):
        print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail}"))
        if not ok:
            failures.append(what)

    venv = tempfile.mkdtemp(prefix="tg-inert-venv-")
    try:
        subprocess.run([a.python, "-m", "venv", "--without-pip", venv], check=True, capture_output=True,
                       timeout=120)
        vpy = os.path.join(venv, "bin", "python")
        for where, py in (("interpreter", a.python), ("fresh venv", vpy)):
            plain, pre = run(py, None), run(py, lib)
            check(f"{where}: same modules at start-up", plain["modules"] == pre["modules"],
                  f"added {sorted(set(pre['modules']) - set(plain['modules']))}, "
                  f"gone {sorted(set(plain['modules']) - set(pre['modules']))}")
            check(f"{where}: same file descriptors", plain["fds"] == pre["fds"], f"{plain['fds']} -> {pre['fds']}")
            added = sorted(set(pre["libs"]) - set(plain["libs"]))
            also = "".join(f", {x} (needed)" for x in sorted(set(added) & set(a.also_mapped)))
            check(f"{where}: no shared object mapped but libtunerguard.so{also}",
                  sorted(set(added) - set(a.also_mapped)) == ["libtunerguard.so"], f"added {added}")
            check(f"{where}: sys.meta_path as it was", pre["meta_path"] == plain["meta_path"], pre["meta_path"])
        # A target module imported: guarded, the finder first in sys.meta_path,
        # and only now libunwind (where installed).
        model = {"PYTHONPATH": os.path.abspath(a.model)}
        plain, pre = run(a.python, None, "target", env_extra=model), run(a.python, lib, "target", env_extra=model)
        check("target imported: Autotuner.run guarded", pre.get("guarded") is True, pre.get("guarded"))
        check("target imported: the finder first, the rest of sys.meta_path as it was",
              pre["meta_path_after_target"] == ["tunerguard.Finder"] + plain["meta_path_after_target"],
              pre["meta_path_after_target"])
        f = pre.get("finder", {})
        check("target imported: the finder is hashable, unique, its repr names tunerguard",
              f.get("hash") and f.get("unique") and "tunerguard" in f.get("repr", ""), f)
        check("target imported: find_spec of a module that is no target is None (by position and keyword), "
              "invalidate_caches() is None",
              f.get("find_spec_other") == "None" and f.get("find_spec_kw") == "None"
              and f.get("invalidate") == "None", f)
        if os.path.exists("/usr/lib/x86_64-linux-gnu/libunwind.so.8"):
            check("target imported: libunwind loaded then", "libunwind.so.8.0.1" in pre["libs_after_target"]
                  or any(x.startswith("libunwind.so") for x in pre["libs_after_target"]),
                  pre["libs_after_target"])
        # Python's debug allocators: the audit hook's entry, allocated before
        # Py_Initialize, is freed at exit by the allocator Python configured
        # (every process aborted there under PYTHONMALLOC=debug or -X dev
        # before, target or not).  The same exit status and stderr as
        # without the preload, a target imported or not.
        prog = ("import importlib, sys\n"
                f"sys.path.insert(0, {os.path.abspath(a.model)!r})  # -E ignores PYTHONPATH\n"
                "if len(sys.argv) > 1: importlib.import_module('triton.runtime.autotuner')\n")
        base = {k: v for k, v in os.environ.items()
                if k not in ("LD_PRELOAD", "PYTHONPATH", "TUNERGUARD_OPTIONS", "PYTHONMALLOC", "PYTHONDEVMODE")}
        # a free-threaded build knows mimalloc's allocators only
        ft = subprocess.run([a.python, "-c", "import sysconfig; print(sysconfig.get_config_var('Py_GIL_DISABLED'))"],
                            capture_output=True, text=True, timeout=120).stdout.strip() == "1"
        other = "mimalloc_debug" if ft else "malloc_debug"
        for label, flags, envx in (("PYTHONMALLOC=debug", [], {"PYTHONMALLOC": "debug"}),
                                   (f"PYTHONMALLOC={other}", [], {"PYTHONMALLOC": other}),
                                   ("-X dev", ["-X", "dev"], {}), ("PYTHONDEVMODE=1", [], {"PYTHONDEVMODE": "1"}),
                                   ("-E, PYTHONMALLOC=debug ignored", ["-E"], {"PYTHONMALLOC": "debug"})):
            for target in ([], ["target"]):
                got = []
                for preload in (None, lib):
                    env = dict(base, **envx)
                    if preload:
                        env["LD_PRELOAD"] = preload
                    q = subprocess.run([a.python, *flags, "-c", prog, *target], env=env, capture_output=True,
                                       text=True, timeout=120, cwd=tempfile.gettempdir())
                    got.append((q.returncode, q.stderr))
                check(f"{label}{', a target imported' if target else ''}: the same exit status and stderr",
                      got[0] == got[1] and got[0][0] == 0, f"{got[0]} -> {got[1][0]}, {got[1][1][-300:]!r}")
    finally:
        shutil.rmtree(venv, ignore_errors=True)
    print(f"inert: {len(failures)} failure(s)" if failures else "inert: all checks hold")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
