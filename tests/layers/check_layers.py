#!/usr/bin/env python3
"""The layers of tunerguard: core/ <- detectors/ <- reports/ <- loader/ <- cuda/ <- guard/ <- tools/.

A file may include and call what is in its own folder or a lower one, never
a higher one.  Checked two ways:
  - every #include "folder/..." line of every .c, .h and .inc file;
  - with nm on the library's object files: no object of a lower folder
    references (U) a symbol that an object of a higher folder defines.
And one rule of core/real_sym.h: no object of the library references plain
dlsym (it would bind to the exported interposer, loader/interpose_dlsym.c).

    check_layers.py --src DIR --objs OBJDIR [--nm nm]
exits 1 with one line per violation.
"""
import argparse
import os
import re
import subprocess
import sys

LAYERS = ["core", "detectors", "reports", "loader", "cuda", "guard", "tools"]
LEVEL = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]+"')


def includes(src):
    bad = []
    for layer in LAYERS:
        top = os.path.join(src, layer)
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".inc")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, src)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in LEVEL and LEVEL[m.group(1)] > LEVEL[layer]:
                            bad.append(f"{rel}:{n}: {layer}/ includes {m.group(1)}/ "
                                       f"({line.strip()}): a lower layer reaches up")
    return bad


def objects(objdir, src=None):
    """{layer: [object paths]} of the object files under objdir (CMake's
    <target>.dir/<folder>/<file>.c.o layout).  With src, an object whose
    source is gone (a build tree older than a move of files) is left out."""
    out = {}
    for dirpath, _, files in os.walk(objdir):
        for f in files:
            if not f.endswith(".o"):
                continue
            parts = os.path.relpath(os.path.join(dirpath, f), objdir).split(os.sep)
            layer = next((p for p in parts if p in LEVEL), None)
            if layer and src and f.endswith(".c.o"):
                rel = os.path.join(*parts[parts.index(layer):])[:-2]
                if not os.path.exists(os.path.join(src, rel)):
                    continue
            if layer:
                out.setdefault(layer, []).append(os.path.join(dirpath, f))
    return out


def symbols(nm, obj):
    defined, undefined = set(), set()
    res = subprocess.run([nm, "-P", obj], capture_output=True, text=True, check=True)
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper() and kind not in "UVW":  # global definitions (weak ones aside)
            defined.add(name)
    return defined, undefined


def calls(nm, objdir, src=None):
    objs = objects(objdir, src)
    if not objs:
        return [f"{objdir}: no object files of {', '.join(LAYERS)} found"]
    owner = {}   # symbol -> (layer, object)
    uses = []    # (layer, object, symbol)
    for layer, files in objs.items():
        for obj in files:
            d, u = symbols(nm, obj)
            for s in d:
                owner[s] = (layer, obj)
            uses += [(layer, obj, s) for s in u]
    bad = []
    for layer, obj, s in sorted(uses):
        name = os.path.relpath(obj, objdir)
        if s in owner and LEVEL[owner[s][0]] > LEVEL[layer]:
            bad.append(f"{name}: {layer}/ calls {s}, defined in {owner[s][0]}/ "
                       f"({os.path.relpath(owner[s][1], objdir)}): a lower layer reaches up")
        if s == "dlsym":
            bad.append(f"{name}: calls plain dlsym, which binds to the exported interposer; "
                       "use tg_real_sym (core/real_sym.h)")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--objs", required=True, action="append", help="a folder of object files (repeatable)")
    ap.add_argument("--nm", default="nm")
    a = ap.parse_args()
    bad = includes(a.src)
    for d in a.objs:
        bad += calls(a.nm, d, a.src)
    for line in bad:
        print(f"check_layers: {line}")
    if bad:
        return 1
    print(f"check_layers: {' <- '.join(l + '/' for l in LAYERS)}: no include or call goes up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
