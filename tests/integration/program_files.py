#!/usr/bin/env python3
"""The call site a report names is the program's line, wherever the kernel
library lives.

    program_files.py --lib build/libtunerguard.so --python ~/.pyenv/versions/3.12.1/bin/python

A small kernel library, `kernlib` (three kernels, each tuned by the fake
Triton Autotuner of fixtures/ and called from its own line, seven frames
deep), is called from two threads of a script, prog.py, thirty frames down
its own call chain.  The library lives:

  pythonpath  in a source folder on PYTHONPATH, outside the script's folder;
  editable    in a source folder outside the script's folder, installed
              editable into a venv (a dist-info with direct_url.json
              {"dir_info": {"editable": true}}, its RECORD listing the .pth
              that puts the folder on sys.path: what pip writes);
  pth_inside  in a subfolder of the script's folder, installed editable
              through a .pth that puts its folder on sys.path;
  finder      the same, installed editable through a finder module whose
              MAPPING names it (setuptools);
  target      in a subfolder of the script's folder on PYTHONPATH, installed
              there (`pip install --target`: a dist-info whose RECORD lists it);
  local       in a subfolder of the script's folder that no distribution owns:
              the program's own package, so its line is the call site.

In detect mode (also for `python -m prog` with the library on PYTHONPATH)
the report names prog.py's line for both threads, in its
summary and in "What to do", and folds the library's frames; in serialize
mode the kernels' waits are one "prevented" report (a wait the guard does
not take for a race, the thread inside not seen benchmarking yet, is no
report at all).  The overlap is
forced with Events and tunerguard's serialize_wait audit event: no sleeps.
Exit 0 when every check holds, 1 otherwise, 77 when the interpreter is
missing."""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")

LIBRARY = '''
from triton.runtime.autotuner import Autotuner


def kern_norm(tag):
    return tag


def kern_gate(tag):
    return tag


def kern_proj(tag):
    return tag


KERNELS = [Autotuner(kern_norm), Autotuner(kern_gate), Autotuner(kern_proj)]


def norm(tag):
    return KERNELS[0].run(tag)


def gate(tag):
    return KERNELS[1].run(tag)


def proj(tag):
    return KERNELS[2].run(tag)


def mixer(tag):
    norm(tag)
    gate(tag)
    return proj(tag)


def layer(tag):
    return mixer(tag)


def block(tag):
    return layer(tag)


def model(tag):
    return block(tag)


def forward(tag):
    return model(tag)
'''

PROGRAM = '''
import sys
import threading
sys.path.insert(0, @FIXTURES@)  # the fake Triton
import kernlib
from kernlib import layers

MODE = sys.argv[1]
n = len(layers.KERNELS)
entered = [threading.Event() for _ in range(n)]
release = [threading.Event() for _ in range(n)]
waits = []


def audit(event, args):
    if event == "tunerguard.serialize_wait":
        waits.append(args)
        if len(waits) <= n:
            release[len(waits) - 1].set()


sys.addaudithook(audit)


def hook(tuner, tag, *rest):
    i = layers.KERNELS.index(tuner)
    if tag == "victim":
        entered[i].set()
        assert release[i].wait(30), "victim never released"
    elif MODE == "serialize" and i + 1 < n:
        assert entered[i + 1].wait(30), "victim never reached the next kernel"


for k in layers.KERNELS:
    k.hook = hook


def nested(depth, tag):
    if depth:
        return nested(depth - 1, tag)
    return kernlib.forward(tag)  # CALL SITE


th = threading.Thread(target=nested, args=(30, "victim"), name="victim")
th.start()
assert entered[0].wait(30)
nested(30, "main")
for r in release:
    r.set()
th.join()
print("waits", len(waits))
'''


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def put_library(folder):
    """kernlib in folder; returns the package's folder."""
    pkg = os.path.join(folder, "kernlib")
    write(os.path.join(pkg, "__init__.py"), "from kernlib.layers import forward\n")
    write(os.path.join(pkg, "layers.py"), LIBRARY)
    return pkg


def put_dist_info(site, record, editable_dir=None):
    """A kernlib-0.1.dist-info in site: RECORD lists `record`; with
    editable_dir, a direct_url.json saying it is an editable install of it."""
    di = os.path.join(site, "kernlib-0.1.dist-info")
    write(os.path.join(di, "METADATA"), "Metadata-Version: 2.1\nName: kernlib\nVersion: 0.1\n")
    write(os.path.join(di, "INSTALLER"), "pip\n")
    write(os.path.join(di, "RECORD"), "".join("%s,,\n" % r for r in record + ["kernlib-0.1.dist-info/RECORD"]))
    if editable_dir:
        url = "file://" + editable_dir
        write(os.path.join(di, "direct_url.json"), json.dumps({"url": url, "dir_info": {"editable": True}}))


FINDER = '''
import importlib.util
import sys

MAPPING = {"kernlib": @PKG@}


class _EditableFinder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname not in MAPPING:
            return None
        root = MAPPING[fullname]
        return importlib.util.spec_from_file_location(fullname, root + "/__init__.py",
                                                      submodule_search_locations=[root])


def install():
    sys.meta_path.append(_EditableFinder)
'''


def make_venv(args, tmp):
    venv = os.path.join(tmp, "venv")
    subprocess.run([args.python, "-m", "venv", "--without-pip", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    return py, site


def layout(args, kind, tmp):
    """Lay out the script and the library; returns (python, env additions,
    the library's package folder, the script)."""
    prog_dir = os.path.join(tmp, "prog")
    script = os.path.join(prog_dir, "prog.py")
    write(script, PROGRAM.replace("@FIXTURES@", repr(FIXTURES)))
    py, env = args.python, {}
    if kind == "pythonpath":
        pkg = put_library(os.path.join(tmp, "src"))
        env["PYTHONPATH"] = os.path.join(tmp, "src")
    elif kind == "editable":
        src = os.path.join(tmp, "kernlib-project", "src")
        pkg = put_library(src)
        py, site = make_venv(args, tmp)
        write(os.path.join(site, "__editable__.kernlib-0.1.pth"), src + "\n")
        put_dist_info(site, ["__editable__.kernlib-0.1.pth"], os.path.dirname(src))
    elif kind in ("pth_inside", "finder"):
        # a project whose package is in python/ (neither at its top nor in
        # src/): found through what the install maps, nothing else
        project = os.path.join(prog_dir, "third_party", "kernlib-project")
        pkg = put_library(os.path.join(project, "python"))
        py, site = make_venv(args, tmp)
        pth = "__editable__.kernlib-0.1.pth"
        if kind == "pth_inside":
            write(os.path.join(site, pth), os.path.dirname(pkg) + "\n")
            put_dist_info(site, [pth], project)
        else:
            finder = "__editable___kernlib_0_1_finder"
            write(os.path.join(site, finder + ".py"), FINDER.replace("@PKG@", repr(pkg)))
            write(os.path.join(site, pth), "import %s; %s.install()\n" % (finder, finder))
            put_dist_info(site, [pth, finder + ".py"], project)
    elif kind == "target":
        vendor = os.path.join(prog_dir, "vendor")
        pkg = put_library(vendor)
        put_dist_info(vendor, ["kernlib/__init__.py", "kernlib/layers.py"])
        env["PYTHONPATH"] = vendor
    else:  # local
        pkg = put_library(prog_dir)
    return py, env, pkg, script


def run(args, kind, mode, dash_m=False):
    tmp = tempfile.mkdtemp(prefix="tg-prog-")
    py, extra, pkg, script = layout(args, kind, tmp)
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "TUNERGUARD_OPTIONS", "PYTHONPATH", "PYTHONSTARTUP"):
        env.pop(k, None)
    env.update(extra)
    env["LD_PRELOAD"] = args.lib
    env["TUNERGUARD_OPTIONS"] = "mode=%s:log_path=%s/tg" % (mode, tmp)
    argv = [py, "-m", "prog", mode] if dash_m else [py, script, mode]
    p = subprocess.run(argv, cwd=os.path.dirname(script), env=env, capture_output=True, text=True, timeout=60)
    text = "".join(open(f).read() for f in sorted(glob.glob(os.path.join(tmp, "tg.*.txt"))))
    recs = [json.loads(line) for f in glob.glob(os.path.join(tmp, "tg.*.jsonl")) for line in open(f)]
    line = next(i for i, s in enumerate(open(script), 1) if "# CALL SITE" in s)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return p, text, recs, line


def blocks(text):
    """The race reports of a text report: from WARNING to SUMMARY."""
    return [b for b in re.findall(r"^WARNING: tunerguard: .*?^SUMMARY:[^\n]*", text, re.M | re.S)
            if "\n  In short: " in b]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--only", help="comma-separated layouts")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folders")
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    if not os.path.exists(args.python):
        print("skipped: %s not installed" % args.python)
        return 77
    ok = True

    def check(name, cond, p, text):
        nonlocal ok
        print("%s %s" % ("PASS" if cond else "FAIL", name))
        if not cond:
            ok = False
            print(p.stdout, p.stderr, text, sep="\n----\n")

    kinds = ["pythonpath", "editable", "pth_inside", "finder", "target", "local"]
    for kind in (args.only.split(",") if args.only else kinds):
        p, text, recs, line = run(args, kind, "detect")
        site = "prog.py:%d" % line
        races = blocks(text)
        check("%s detect: the program ran, a race was reported" % kind,
              p.returncode == 0 and races and "waits 0" in p.stdout, p, text)
        if kind == "local":
            # the program's own package: its line is the call site
            short = [re.search(r"In short:.*?\n  What it does", b, re.S).group(0) for b in races]
            check("%s detect: the program's own package is the call site" % kind,
                  short and all("kernlib/layers.py:" in s and "prog.py:" not in s for s in short), p, text)
            continue
        for b in races[:1] + races[-1:]:
            short = re.search(r"In short:.*?\n  What it does", b, re.S).group(0)
            todo = re.search(r"^  What to do:[^\n]*", b, re.M).group(0)
            check("%s detect: both threads' call site is %s" % (kind, site),
                  short.count(site) == 2 and "kernlib" not in short, p, b)
            check("%s detect: What to do names %s" % (kind, site),
                  site in todo and "kernlib" not in todo, p, b)
            check("%s detect: the library's frames are folded" % kind,
                  re.search(r"\[\d+ library frames: layers\.py", b) is not None, p, b)
        loc = [r.get("location") or {} for r in recs if r.get("kind") == "race"]
        check("%s detect: JSON location is %s" % (kind, site),
              loc and all(str(x.get("file", "")).endswith("/prog.py") and x.get("line") == line for x in loc),
              p, json.dumps(loc))

        if kind == "pythonpath":
            # python -m prog from the script's folder: the working folder is the program's
            p, text, recs, line = run(args, kind, "detect", dash_m=True)
            races = blocks(text)
            check("%s python -m detect: both threads' call site is %s" % (kind, site),
                  p.returncode == 0 and races and all(
                      re.search(r"In short:.*?\n  What it does", b, re.S).group(0).count(site) == 2
                      for b in races), p, text)

        p, text, recs, line = run(args, kind, "serialize")
        prevented = [r for r in recs if r.get("kind") == "race" and r.get("serialized")]
        others = [r.get("other_kernels") for r in recs if r.get("kind") == "repeats"]
        check("%s serialize: three waits, one prevented report at %s" % (kind, site),
              p.returncode == 0 and "waits 3" in p.stdout and len(prevented) == 1 and len(others) == 1 and others[0] >= 1 and
              text.count("WARNING: tunerguard: race prevented (serialize)") == 1 and site in text, p, text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
