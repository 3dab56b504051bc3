#!/usr/bin/env python3
"""Circles of calls among tunerguard's object files.

An object file calls another when it references (U) a global symbol the
other defines (nm -P).  Files that call each other in a circle form one
strongly connected component of that graph; a component is a group of files
that a reader cannot understand one at a time.  This prints every component
of more than one file, largest first, and exits 1 when the largest has more
than --max files.

    call_cycles.py --objs OBJDIR [--objs OBJDIR ...] [--nm nm] [--max N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layers import LEVEL, symbols  # noqa: E402


def object_files(objdir):
    """{short name: path} of the product's object files under objdir, named
    by their source ("guard/session.c")."""
    out = {}
    for dirpath, _, files in os.walk(objdir):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            parts = os.path.relpath(os.path.join(dirpath, f), objdir).split(os.sep)
            layer = next((i for i, p in enumerate(parts) if p in LEVEL), None)
            if layer is None:
                continue
            out["/".join(parts[layer:])[:-2]] = os.path.join(dirpath, f)
    return out


def graph(nm, objs):
    owner, uses = {}, {}
    for name, path in objs.items():
        d, u = symbols(nm, path)
        for s in d:
            owner[s] = name
        uses[name] = u
    return {a: sorted({owner[s] for s in u if s in owner and owner[s] != a}) for a, u in uses.items()}


def components(g):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on.add(v)
            edges = g.get(v, [])
            if i < len(edges):
                work.append((v, i + 1))
                w = edges[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objs", required=True, action="append", help="a folder of object files (repeatable)")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--max", type=int, default=0, help="fail when a circle holds more files (0: report only)")
    a = ap.parse_args()
    objs = {}
    for d in a.objs:
        objs.update(object_files(d))
    if not objs:
        print("call_cycles: no object files found")
        return 1
    comps = sorted((c for c in components(graph(a.nm, objs)) if len(c) > 1), key=lambda c: (-len(c), c))
    for c in comps:
        print(f"call_cycles: {len(c)} files call each other in a circle: {' '.join(c)}")
    largest = len(comps[0]) if comps else 1
    print(f"call_cycles: largest circle {largest} file{'s' if largest > 1 else ''} ({len(objs)} object files)")
    return 1 if a.max and largest > a.max else 0


if __name__ == "__main__":
    sys.exit(main())
