#!/usr/bin/env python3
"""The serialize benchmark still runs and measures what it says (not a timed
test: no figure is checked against a target).  On the CPU model, one short
round: every steady cell of the four variants ran, checked its results and
measured its process's raw rate (the adjusted table); the in-process phases
ran in every process, bare's and barelock's with tunerguard's launch records
off, and detect is judged against bare; the cold start under the lock and
under serialize tuned each key once.

  serialize_bench_smoke.py --lib build/libtunerguard.so"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
a = ap.parse_args()
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
bench = os.path.join(root, "bench", "serialize_bench.py")
failures = []

with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, TG_BENCH_DIR=d)

    def run(*args):
        js = os.path.join(d, "cells.json")
        p = subprocess.run([sys.executable, bench, "--lib", a.lib, "--threads", "2", "--rounds", "1",
                            "--steps", "300", "--json", js, *args], env=env, capture_output=True, text=True,
                           timeout=600)
        with open(js) as f:
            return p, json.load(f)

    p, cells = run("--variants", "none,lock,detect,serialize")
    if p.returncode != 0:
        failures.append(f"steady run: exit {p.returncode}: {p.stderr[-500:]}")
    if sorted(c["variant"] for c in cells) != ["detect", "lock", "none", "serialize"]:
        failures.append(f"steady run: cells {[c['variant'] for c in cells]}")
    for c in cells:
        if not c.get("ok") or c.get("configs_benchmarked_steady") != 0 or not c.get("raw_per_s", 0) > 0:
            failures.append(f"steady cell {c['variant']}: {c}")
    for part in ("paired: serialize / best", "adjusted: each cell's calls/s over its own process's raw"):
        if part not in p.stdout:
            failures.append(f"steady run: no '{part}' in\n{p.stdout}")

    # In-process phases: every process ran every phase of every round, the launches of each
    # phase recorded (under the preload) but for bare's and barelock's, whose mode is off.
    rounds = 10  # the Williams design's rows for 5 phases
    p, cells = run("--variants", "none,detect,serialize", "--interleave", "tg,none,lock,bare,barelock",
                   "--inner-rounds", str(rounds), "--steps", "100")
    if p.returncode != 0:
        failures.append(f"in-process run: exit {p.returncode}: {p.stderr[-500:]}")
    if sorted(c["variant"] for c in cells) != ["detect", "none", "serialize"]:
        failures.append(f"in-process run: cells {[c['variant'] for c in cells]}")
    for c in cells:
        want = ["tg", "none", "lock"] + (["bare", "barelock"] if c["variant"] != "none" else [])
        got = sorted((x["round"], x["phase"]) for x in c.get("phases", []))
        if not c.get("ok") or got != sorted((r, ph) for r in range(rounds) for ph in want):
            failures.append(f"in-process cell {c['variant']}: phases {got}, ok {c.get('ok')}, {c.get('errors')}")
        for x in c.get("phases", []):
            rec = x.get("launches_recorded")
            # 2 threads x 100 steps x 2 kernels, but none under bare and barelock (and no count without the preload)
            expect = None if c["variant"] == "none" else 0 if x["phase"].startswith("bare") else 2 * 100 * 2
            if rec != expect:
                failures.append(f"in-process cell {c['variant']} phase {x['phase']}: {rec} launches recorded, "
                                f"expected {expect}")
        if c.get("tg_is") != ("function" if c["variant"] == "none" else "guard"):
            failures.append(f"in-process cell {c['variant']}: tg was a {c.get('tg_is')}, not "
                            f"{'none own function' if c['variant'] == 'none' else 'the guard'}")
        first = {}  # round -> its first phase (the phases are in the order they ran)
        for x in c.get("phases", []):
            first.setdefault(x["round"], x["phase"])
        firsts = set(first.values())
        if len(firsts) < 2 or any("after" not in x for x in c.get("phases", [])):
            failures.append(f"in-process cell {c['variant']}: rounds all begin with {firsts}, or no 'after'")
    # Judged against what a user without tunerguard has: the mode-off phases.
    for part in ("judged by", " (the better) ", "none (no preload)", "none / bare", "lock / barelock",
                 "| 2 | detect | 1 / 10 | tg / bare ", "| 2 | serialize | 1 / 10 | tg / bare"):
        if part not in p.stdout:
            failures.append(f"in-process run: no '{part}' in\n{p.stdout}")
    again = subprocess.run([sys.executable, bench, "--from-json", os.path.join(d, "cells.json")],
                           capture_output=True, text=True, timeout=60)
    if again.returncode != 0 or [ln for ln in again.stdout.splitlines() if ln.startswith("| 2 |")] != \
            [ln for ln in p.stdout.splitlines() if ln.startswith("| 2 |")]:
        failures.append(f"in-process --from-json: not the same rows:\n{again.stdout}\n{again.stderr[-300:]}")

    p, cells = run("--cold-only", "--variants", "lock,serialize")
    if p.returncode != 0:
        failures.append(f"cold run: exit {p.returncode}: {p.stderr[-500:]}")
    for c in cells:
        if not c.get("ok") or c.get("configs_benchmarked_cold") != c.get("configs_expected"):
            failures.append(f"cold cell {c['variant']}: each key once? {c}")
    if "steady state" in p.stdout:
        failures.append(f"cold run printed a steady table:\n{p.stdout}")

for f in failures:
    print("FAIL:", f)
print("serialize_bench_smoke:", "FAIL" if failures else "ok")
sys.exit(1 if failures else 0)
