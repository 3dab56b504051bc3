#!/usr/bin/env python3
"""tools/triton_facts.py --fakecuda DIR [--check FILE]: the table of what tunerguard relies on
in each Triton release (docs/triton-versions.md), read from each release's own
triton.runtime.autotuner in its venv (tools/triton_releases.sh) and from the model of Triton
main (tests/repro/model).

Each row is measured in the interpreter that imports that Triton, without tunerguard: the
methods Autotuner defines and the statements of their source (ast), and, for the rows that say
"(run)", two calls of an autotuned kernel through the stand-ins of tests/repro (the stand-in
libcuda in DIR counts the synchronizes).  Prints the Markdown table; with --check FILE, exits 1
when FILE's table (between the facts markers) differs, 77 when a venv is missing.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- triton_facts.py: begin -->", "<!-- triton_facts.py: end -->"

# Runs in each interpreter: prints {row id: bool}.
PROBE = r'''
import ast, inspect, json, sys, textwrap
import os
sys.path.insert(0, os.environ["TG_STANDIN_DIR"])
if os.environ.get("TG_TRITON_RELEASE") == "1":
    import triton_standin
    triton_standin.install()
import triton
from triton.runtime import autotuner as m
A = m.Autotuner

def tree(f):
    return ast.parse(textwrap.dedent(inspect.getsource(f)))

def src(f):
    return inspect.getsource(f)

def ends_clearing_nargs(f):
    body = tree(f).body[0].body
    stmts = [s for s in body if not isinstance(s, ast.Return)]
    last = stmts[-1] if stmts else None
    no_finally = not any(isinstance(n, ast.Try) and n.finalbody for n in ast.walk(tree(f)))
    return bool(isinstance(last, ast.Assign) and ast.unparse(last) == "self.nargs = None" and no_finally) \
        if hasattr(ast, "unparse") else ("self.nargs = None" in src(f).strip().splitlines()[-2] and no_finally)

def closure_names(f):
    return {n.name for n in ast.walk(tree(f)) if isinstance(n, ast.FunctionDef)}

run_src = src(A.run)
init_src = src(A.__init__)
facts = {
    "run_warmup": "run" in A.__dict__ and "warmup" in A.__dict__,
    "tuning_methods": all(n in A.__dict__ for n in ("_bench", "prune_configs", "check_disk_cache")),
    "benchmark_closure": "benchmark" in closure_names(A.run),
    "do_bench_arg": "do_bench" in inspect.signature(m.autotune).parameters,
    "nargs_cleared": ends_clearing_nargs(A.run) and ends_clearing_nargs(A.warmup),
    "nargs_first": run_src.split("def run", 1)[1].split("\n")[1].strip().startswith("self.nargs ="),
    "single_shortcut": "len(pruned_configs) == 1" in run_src,
    "listener": "knobs.autotuning.listener" in run_src,
    "empty_prune_raises": "AutotunerError" in src(A.prune_configs),
    "none_safe_hooks": "self.restore_copies.items()" in init_src,
    "key_names_checked": "not kernel arguments" in init_src,
}

# (run): one call pruned to one config, then one call that tunes two, each on a new key
import ctypes
lib = ctypes.CDLL("libcuda.so.1")
lib.fakecuda_count.restype = ctypes.c_ulonglong
lib.fakecuda_count.argtypes = [ctypes.c_char_p]
syncs = lambda: lib.fakecuda_count(b"cuCtxSynchronize")

def prune(configs, named_args, **kwargs):
    return configs[:1] if named_args["n"] == 1 else configs

@triton.autotune(configs=[triton.Config({"B": 1}), triton.Config({"B": 2})], key=["n"],
                 prune_configs_by={"early_config_prune": prune})
@triton.jit
def kernel(n, B: triton.language.constexpr = 0):
    pass

s0 = syncs()
kernel[(1,)](1)
s1 = syncs()
kernel[(1,)](2)
s2 = syncs()
facts["run_single_syncs"] = s1 > s0
facts["run_tuning_syncs"] = s2 > s1
facts["run_nargs_none"] = "nargs" in vars(kernel) and kernel.nargs is None
json.dump(facts, sys.stdout)
'''

ROWS = [
    ("run_warmup", "`Autotuner.run` and `Autotuner.warmup` defined on `triton.runtime.autotuner.Autotuner` "
     "(the default targets)"),
    ("tuning_methods", "tuning methods `_bench`, `prune_configs`, `check_disk_cache` (marked: a thread inside "
     "one is tuning)"),
    ("benchmark_closure", "the `benchmark` closure in `run` (a frame name that says benchmarking)"),
    ("nargs_first", "`run()` sets `self.nargs` first"),
    ("nargs_cleared", "`run()` and `warmup()` end with `self.nargs = None`, no `finally` (the race-at-exit check)"),
    ("do_bench_arg", "`triton.autotune(do_bench=...)` (the tests' timer)"),
    ("single_shortcut", "a call pruned to one config is stored without benchmarking (no synchronize, no `_bench`)"),
    ("listener", "`knobs.autotuning.listener` called inside `run()` after tuning"),
    ("empty_prune_raises", "`prune_configs` raises `AutotunerError` when `early_config_prune` returns nothing"),
    ("none_safe_hooks", "the default `_post_hook` restores what `self.restore_copies` holds (no `KeyError` "
     "when another thread emptied it)"),
    ("key_names_checked", "`key`, `reset_to_zero`, `restore_value` names checked against the kernel's arguments"),
    ("run_tuning_syncs", "(run) a call that tunes two configs synchronizes"),
    ("run_single_syncs", "(run) a call whose pruning leaves one config synchronizes"),
    ("run_nargs_none", "(run) after a call, `nargs` is in the instance `__dict__`, `None`"),
]


def columns():
    out = subprocess.run([os.path.join(ROOT, "tools", "triton_releases.sh"), "list"], capture_output=True,
                         text=True, check=True).stdout.split()
    standin = os.path.join(ROOT, "tests", "repro", "standin")
    cols = [(t.split("=")[0], t.split("=")[2], {"TG_TRITON_RELEASE": "1", "TG_STANDIN_DIR": standin}) for t in out]
    cols.append(("main (model)", sys.executable,
                 {"TG_TRITON_MODEL": "main", "TG_STANDIN_DIR": os.path.join(ROOT, "tests", "repro", "model")}))
    return cols


def probe(python, env, fakecuda):
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD", "TG_TRITON_MODEL",
                                                                "TG_TRITON_RELEASE")}, **env}
    env["LD_LIBRARY_PATH"] = fakecuda + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    p = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, env=env, cwd="/")
    if p.returncode != 0:
        raise RuntimeError(f"{python}: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(p.stdout)


def table(fakecuda):
    cols = columns()
    missing = [c[0] for c in cols if not os.path.exists(c[1])]
    if missing:
        return None, f"no venv for Triton {', '.join(missing)} (tools/triton_releases.sh make)"
    facts = [(name, probe(py, env, fakecuda)) for name, py, env in cols]
    lines = ["| What | " + " | ".join(n for n, _ in facts) + " |",
             "| --- |" + " --- |" * len(facts)]
    for key, text in ROWS:
        lines.append(f"| {text} | " + " | ".join("yes" if f[key] else "no" for _, f in facts) + " |")
    return "\n".join(lines) + "\n", None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fakecuda", required=True, help="directory of the stand-in libcuda.so.1 (build/tests/fakecuda)")
    ap.add_argument("--check", metavar="FILE", help="compare with FILE's table instead of printing")
    a = ap.parse_args()
    check = a.check
    if not os.path.isfile(os.path.join(a.fakecuda, "libcuda.so.1")):
        ap.error(f"--fakecuda {a.fakecuda!r} has no libcuda.so.1")
    text, why = table(os.path.abspath(a.fakecuda))
    if why:
        print(f"SKIP: {why}")
        return 77 if check else 1
    if not check:
        sys.stdout.write(text)
        return 0
    doc = open(check).read()
    if BEGIN not in doc or END not in doc:
        print(f"{check}: no {BEGIN} ... {END} markers")
        return 1
    have = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    if have != text:
        print(f"{check}: the facts table differs from what the releases say; regenerate with "
              f"tools/triton_facts.py --fakecuda build/tests/fakecuda:\n{text}")
        return 1
    print(f"{check}: the facts table matches the releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
