#!/usr/bin/env python3
"""tunerguard in a program that embeds CPython (embed_host.c: Py_Initialize,
then PyRun_SimpleString or PyRun_SimpleFile; Python's own main never runs, so
no cpython.run_* audit event).

    run_embed.py --host EMBED_HOST --lib LIB --fixtures tests/integration/fixtures

For each way the host runs the script (string, file): detect reports the
forced race once, serialize makes the second call wait for the first; and
the target imported through importlib.import_module arms too.  A host whose
script imports no target writes nothing and says nothing.  LD_PRELOAD is set
in each child's environment only.  Exit 0 when every check holds, 1
otherwise."""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "embed_race.py")


def run(args, how, mode, options, extra=(), site=False):
    """site: a sitecustomize imports the target while Py_Initialize runs."""
    tmp = tempfile.mkdtemp(prefix="tg-embed-")
    env = dict(os.environ, LD_PRELOAD=args.lib, TUNERGUARD_OPTIONS=options)
    for k in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(k, None)
    if site:
        os.mkdir(os.path.join(tmp, "site"))
        with open(os.path.join(tmp, "site", "sitecustomize.py"), "w") as f:
            f.write("import sys\nsys.path.insert(0, %r)\nimport triton.runtime.autotuner\n" % args.fixtures)
        env["PYTHONPATH"] = os.path.join(tmp, "site")
    p = subprocess.run([args.host, how, SCRIPT, args.fixtures, mode, *extra], cwd=tmp, env=env,
                       capture_output=True, text=True, timeout=60)
    files = sorted(f for f in os.listdir(tmp) if f != "site")
    text = "".join(open(f).read() for f in glob.glob(os.path.join(tmp, "tg.*.txt")))
    shutil.rmtree(tmp, ignore_errors=True)
    return p, files, text


def run_repro(args, how, mode):
    """tests/repro's seeds004 scenario (eight threads tune one cold kernel of
    the Triton model on the stand-in libcuda, the overlap forced in its
    synchronize gate), run by the host; mode none: without tunerguard."""
    tmp = tempfile.mkdtemp(prefix="tg-embed-repro-")
    env = dict(os.environ, TG_TRITON_MODEL="3.6", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.path.join(args.repro, "scenarios"),
               LD_LIBRARY_PATH=args.fakecuda + (":" + os.environ["LD_LIBRARY_PATH"]
                                                if os.environ.get("LD_LIBRARY_PATH") else ""))
    for k in ("LD_PRELOAD", "TUNERGUARD_OPTIONS", "PYTHONHOME", "PYTHONSTARTUP", "TG_TRITON_RELEASE"):
        env.pop(k, None)
    if mode != "none":
        env.update(LD_PRELOAD=args.lib, TUNERGUARD_OPTIONS="mode=%s:log_path=tg" % mode)
    extra = ["--expect-serialized"] if mode == "serialize" else []
    p = subprocess.run([args.host, how, os.path.join(args.repro, "scenarios", "seeds004.py"), *extra], cwd=tmp,
                       env=env, capture_output=True, text=True, timeout=120)
    files = sorted(os.listdir(tmp))
    text = "".join(open(f).read() for f in glob.glob(os.path.join(tmp, "tg.*.txt")))
    shutil.rmtree(tmp, ignore_errors=True)
    return p, files, text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--repro", help="tests/repro (the Triton model and its scenarios)")
    ap.add_argument("--fakecuda", help="directory of the stand-in libcuda.so.1; with --repro, the seeds004 checks")
    args = ap.parse_args()
    args.lib, args.host, args.fixtures = (os.path.abspath(a) for a in (args.lib, args.host, args.fixtures))
    if args.repro and args.fakecuda:
        args.repro, args.fakecuda = os.path.abspath(args.repro), os.path.abspath(args.fakecuda)
    ok = True

    def check(name, cond, p, files, text=""):
        nonlocal ok
        print(f"{'PASS' if cond else 'FAIL'} {name}", flush=True)
        if not cond:
            ok = False
            print(f"rc={p.returncode} files={files}", p.stdout, p.stderr, text, sep="\n----\n")

    overlap = "ORDER victim:start,other:start,other:end,victim:end"
    waited = "ORDER victim:start,victim:end,other:start,other:end"
    for how in ("string", "file"):
        p, files, text = run(args, how, "detect", "log_path=tg")
        check(f"PyRun_Simple{how.title()}, detect: the target's import arms, the race is reported once",
              p.returncode == 0 and "GUARDED True" in p.stdout and overlap in p.stdout
              and text.count("WARNING: tunerguard: thread entered a tuner") == 1 and "Autotuner.run" in text
              and re.search(r"^tunerguard: 1 race reported", p.stderr, re.M), p, files, text)
        p, files, text = run(args, how, "serialize", "mode=serialize:log_path=tg")
        check(f"PyRun_Simple{how.title()}, serialize: the second call waits until the first ended",
              p.returncode == 0 and "GUARDED True" in p.stdout and waited in p.stdout
              and re.search(r"^tunerguard: .*1 call serialized", p.stderr, re.M)
              and "race prevented (serialize)" in text, p, files, text)
    p, files, text = run(args, "file", "detect", "log_path=tg", ["importlib"])
    check("importlib.import_module of the target: armed, the race reported",
          p.returncode == 0 and "GUARDED True" in p.stdout and overlap in p.stdout
          and text.count("WARNING: tunerguard: thread entered a tuner") == 1, p, files, text)
    p, files, text = run(args, "string", "detect", "log_path=tg", site=True)
    check("the target imported by sitecustomize, inside Py_Initialize: armed, the race reported",
          p.returncode == 0 and "GUARDED True" in p.stdout and overlap in p.stdout
          and text.count("WARNING: tunerguard: thread entered a tuner") == 1, p, files, text)
    for how in ("string", "file"):
        p, files, text = run(args, how, "quiet", "mode=serialize:verbosity=2:log_path=tg")
        check(f"PyRun_Simple{how.title()}, no target imported: nothing said, no file",
              p.returncode == 0 and p.stdout == "QUIET 4\n" and p.stderr == "" and files == [], p, files)
    if not (args.repro and args.fakecuda):
        print("(no --repro/--fakecuda: the seeds004 checks are not run)")
    else:
        fail_line = "repro seeds004: FAIL: thread worker-0 raised TypeError: 'NoneType' object is not a mapping"
        for how in ("string", "file"):
            name = "PyRun_Simple%s, seeds004" % how.title()
            p, files, text = run_repro(args, how, "none")
            check(name + " without tunerguard: the TypeError", p.returncode == 1 and fail_line in p.stderr,
                  p, files)
            p, files, text = run_repro(args, how, "detect")
            check(name + ", detect: reported",
                  "WARNING: tunerguard" in text and "test_seed004" in text, p, files, text)
            p, files, text = run_repro(args, how, "serialize")
            check(name + ", serialize: every thread's result right",
                  p.returncode == 0 and "calls serialized" in p.stderr, p, files, text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
