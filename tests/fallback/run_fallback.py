#!/usr/bin/env python3
"""The loader without its core (loader/core_api.h): one line, then pass-through.

  run_fallback.py --python EXE --lib LIB --fakecuda DIR [--objcopy OBJCOPY]

Copies LIB (libtunerguard.so) alone into a scratch folder: its embedded copy
of the core must serve (every launch recorded, no line).  Then a copy of LIB
without that section (objcopy --remove-section .tg_core), with no
libtunerguard_core.so beside it (and once with a file there that is not a
library), and runs a program under it with the stand-in libcuda (DIR) that
needs the core in each way the loader knows: a target module imported, a
driver function looked up with dlsym on the libcuda handle, the exported
definition reached through dlsym(RTLD_DEFAULT) and called.  Each must get
exactly one line on stderr naming the missing core, every driver call must
reach the driver (the stand-in's own counts), nothing recorded by tunerguard,
and the program's own result unchanged.  mode=off never looks for the core:
no line at all.  The loader alone under a file-size limit below its core's
size (ulimit -f: writing the memory file past it raised SIGXFSZ) says so in
one line and passes through.  Exit 0 when every check holds, 1 otherwise, 77 when the
interpreter is missing."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

MODULE = """
class Tuner:
    def run(self, x):
        return x + 1
"""

# argv[1]: the order: "import" (target first, then CUDA), "cuda" (CUDA only)
# or "chdir" (to / first, then CUDA only)
PROGRAM = r"""
import ctypes, sys
order = sys.argv[1]
if order == "chdir":  # the program leaves the folder a relative LD_PRELOAD names
    import os
    os.chdir("/")
if order == "import":
    import tgfb_target
    assert tgfb_target.Tuner().run(1) == 2
cuda = ctypes.CDLL("libcuda.so.1")
args = (ctypes.c_void_p(16), 1, 1, 1, 128, 1, 1, 0, None, None, None)
# dlsym on the libcuda handle: the interposer's wrapping path
assert cuda.cuLaunchKernel(*args) == 0
# dlsym(RTLD_DEFAULT): our exported forwarder, libcuda being loaded
glob = ctypes.CDLL(None)
assert glob.cuLaunchKernel(*args) == 0
assert glob.cuLaunchKernel(*args) == 0
count = cuda.fakecuda_count
count.restype = ctypes.c_ulonglong
tg = glob.tunerguard_cuda_count
tg.restype = ctypes.c_ulonglong
print("driver", count(b"cuLaunchKernel"), "recorded", tg(b"cuLaunchKernel"), "unknown", tg(b"cuNoSuch") == 2**64 - 1)
"""


def run(py, lib, fakecuda, work, order, opts, fsize=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNERGUARD", "PYTHON", "LD_"))}
    work = os.path.abspath(work)
    env.update(LD_PRELOAD=lib, LD_LIBRARY_PATH=fakecuda, PYTHONPATH=work,
               TUNERGUARD_OPTIONS="targets=tgfb_target:Tuner.run:log_path=" + os.path.join(work, "tg") + opts)

    def limit():  # ulimit -f: a memory file written past it raises SIGXFSZ
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return subprocess.run([py, os.path.join(work, "prog.py"), order], env=env, cwd=work,
                          capture_output=True, text=True, timeout=120, preexec_fn=limit if fsize else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--fakecuda", required=True)
    ap.add_argument("--objcopy", default="objcopy")
    a = ap.parse_args()
    a.fakecuda = os.path.abspath(a.fakecuda)
    if not os.access(a.python, os.X_OK):
        print(f"skip: {a.python} missing")
        return 77
    bad = []
    with tempfile.TemporaryDirectory(prefix="tg-fallback-") as work:
        with open(os.path.join(work, "tgfb_target.py"), "w") as f:
            f.write(MODULE)
        with open(os.path.join(work, "prog.py"), "w") as f:
            f.write(PROGRAM)
        # The loader alone: its embedded copy of the core serves (the one
        # file is the whole tool).  Without that copy (removed with objcopy)
        # and without a core beside it, or with a file beside it that is
        # not a library (a file there is preferred): one line, pass-through.
        alone = os.path.join(work, "alone", "libtunerguard.so")
        lib = os.path.join(work, "lib", "libtunerguard.so")
        for d in (alone, lib):
            os.mkdir(os.path.dirname(d))
        shutil.copy(a.lib, alone)
        subprocess.run([a.objcopy, "--remove-section", ".tg_core", a.lib, lib], check=True)
        core = os.path.join(os.path.dirname(lib), "libtunerguard_core.so")
        cases = [("embedded only", alone, None, False), ("missing", lib, None, True),
                 ("not a library", lib, b"not an ELF file\n", True)]
        for what, preload, content, fails in cases:
            if content is not None:
                with open(core, "wb") as f:
                    f.write(content)
            for order in ("import", "cuda"):
                for opts in ("", ":mode=off"):
                    name = f"core {what}, {order} first{opts}"
                    want_line = fails and not opts  # mode=off never looks for the core
                    want_recorded = 0 if fails or opts else 3
                    p = run(a.python, preload, a.fakecuda, work, order, opts)
                    lines = p.stderr.splitlines()
                    if p.returncode != 0:
                        bad.append(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
                        continue
                    if p.stdout.strip() != f"driver 3 recorded {want_recorded} unknown True":
                        bad.append(f"{name}: stdout {p.stdout.strip()!r}")
                    if want_line:
                        ok = (len(lines) == 1 and lines[0].startswith("tunerguard: cannot load the core library (")
                              and "libtunerguard_core.so" in lines[0] and "pass straight to the driver" in lines[0])
                    else:
                        ok = not lines
                    if not ok:
                        bad.append(f"{name}: stderr {p.stderr!r}")
                    if any(n.startswith("tg.") for n in os.listdir(work)):
                        bad.append(f"{name}: report files written: {os.listdir(work)}")
        # The embedded copy under a file-size limit below its size: one line
        # naming the limit, then pass-through (it killed the process with
        # SIGXFSZ before).
        p = run(a.python, alone, a.fakecuda, work, "cuda", "", fsize=64 * 1024)
        lines = p.stderr.splitlines()
        if (p.returncode != 0 or p.stdout.strip() != "driver 3 recorded 0 unknown True" or len(lines) != 1
                or "file-size limit" not in lines[0] or "pass straight to the driver" not in lines[0]):
            bad.append(f"embedded copy over ulimit -f: exit {p.returncode}, stdout {p.stdout.strip()!r}, "
                       f"stderr {p.stderr.strip()!r}")
        # The core is found beside a loader preloaded by a relative path
        # after the program changed directory (the constructor made the path
        # absolute): no line, every launch recorded.
        rel = os.path.join(work, "rel")
        os.mkdir(rel)
        shutil.copy(a.lib, rel)
        shutil.copy(os.path.join(os.path.dirname(a.lib), "libtunerguard_core.so"), rel)
        p = run(a.python, os.path.join("rel", "libtunerguard.so"), a.fakecuda, work, "chdir", "")
        if p.returncode != 0 or p.stdout.strip() != "driver 3 recorded 3 unknown True" or p.stderr.strip():
            bad.append(f"relative preload, chdir before the first CUDA call: exit {p.returncode}, "
                       f"stdout {p.stdout.strip()!r}, stderr {p.stderr.strip()!r}")
    for b in bad:
        print("FAIL", b)
    print("ok" if not bad else f"{len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
