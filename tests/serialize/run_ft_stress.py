#!/usr/bin/env python3
"""ft_stress.py under the preload, mode=serialize, on a free-threaded CPython
with PYTHON_GIL=0, several rounds; ft_steady.py under detect as many rounds;
then ft_fork.py once:

  run_ft_stress.py --lib LIB --python EXE [--rounds R] [--pairs N]

(TG_FT_STRESS_ANY=1: on a build with a GIL too, to check the test itself.)

Exit 0 when every round passes, 1 otherwise, 77 when the interpreter is
missing or is not a free-threaded build, or the library refuses it (one
line says which)."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MEET = 4  # ft_stress.py's met pairs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=12)
    args = ap.parse_args()
    if not os.path.exists(args.python):
        print(f"skipped: {args.python} not installed")
        return 77
    ft = subprocess.run([args.python, "-c", "import sysconfig; print(sysconfig.get_config_var('Py_GIL_DISABLED'))"],
                        capture_output=True, text=True).stdout.strip()
    if ft != "1" and not os.environ.get("TG_FT_STRESS_ANY"):
        print(f"skipped: {args.python} is not a free-threaded build")
        return 77
    n = args.pairs
    mods = tempfile.mkdtemp(prefix="tg-ftmods-")
    for i in range(n):
        with open(os.path.join(mods, f"ftmod{i}.py"), "w") as f:
            f.write("from tgfix.tuners import Tuner\n\n\nclass Sub(Tuner):\n"
                    f"    def run(self, body):\n        return 'Mod{i}', body()\n")
    ok = True
    for r in range(args.rounds):
        tmp = tempfile.mkdtemp(prefix="tg-ft-")
        prefix = os.path.join(tmp, "tg")
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(args.lib), PYTHON_GIL="0", PYTHONDONTWRITEBYTECODE="1",
                   TUNERGUARD_OPTIONS=f"mode=serialize:verbosity=2:log_path={prefix}:targets=tgfix.tuners:Tuner.run")
        p = subprocess.run([args.python, os.path.join(HERE, "ft_stress.py"), mods, str(n)], env=env,
                           capture_output=True, text=True, timeout=300)
        if "does not serve" in p.stderr:
            print("skipped: the library refuses this interpreter:", p.stderr.strip().splitlines()[-1])
            return 77
        text = "".join(open(f).read() for f in glob.glob(prefix + ".*.txt"))
        races = [r for f in glob.glob(prefix + ".*.jsonl") for r in map(json.loads, open(f)) if r["kind"] == "race"]
        # "Meet0a.run" on a "__main__.Meet0a": a guard slot two installs shared names the other class
        wrong = [(r["tuner"]["method"], r["tuner"]["class"]) for r in races
                 if r["tuner"]["method"].split(".")[0] != r["tuner"]["class"].rsplit(".", 1)[-1]]
        s = 2 * n + 2 * MEET
        m = re.search(r"(\d+) calls? serialized", p.stderr)
        seen = re.search(r"races? prevented by serialize \((\d+) seen\)", p.stderr)
        more = re.search(r"contended: [^)]* and (\d+) more", p.stderr)
        checks = [
            ("the program passed (no wrong run(), no two threads inside, none left)", p.returncode == 0),
            (f"{s} races seen", bool(seen) and int(seen.group(1)) == s),
            (f"{s} race reports, each naming its instance's class's run() (wrong: {wrong[:3]})",
             len(races) == s and not wrong),
            # B's waits, one a class, and the turn's between tuners (as many as the scheduler makes)
            (f"at least {s} calls serialized", bool(m) and int(m.group(1)) >= s),
            (f"{s} contended kernels", bool(more) and int(more.group(1)) + 3 == s),
            ("none still waiting at exit", "still waiting" not in p.stderr),
        ]
        for name, cond in checks:
            print(f"{'PASS' if cond else 'FAIL'} round {r}: {name}")
            ok = ok and cond
        if not all(c for _, c in checks):
            print(p.stdout, p.stderr, text[-3000:], sep="\n----\n")
    # detect in the steady state: every overlap a race, reported, repeated and linked while the
    # threads enter and leave the same slots (a report that read another thread's slot
    # without the entry lock crashed 5 runs of 12)
    for r in range(args.rounds):
        tmp = tempfile.mkdtemp(prefix="tg-ft-")
        prefix = os.path.join(tmp, "tg")
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(args.lib), PYTHON_GIL="0", PYTHONDONTWRITEBYTECODE="1",
                   TUNERGUARD_OPTIONS=f"mode=detect:log_path={prefix}")
        p = subprocess.run([args.python, os.path.join(HERE, "ft_steady.py"), "8", "10000"], env=env,
                           capture_output=True, text=True, timeout=300)
        recs = [json.loads(x) for f in glob.glob(prefix + ".*.jsonl") for x in open(f)]
        races = [x for x in recs if x["kind"] == "race"]
        seen = re.search(r"(\d+) races? reported \((\d+) seen\)", p.stderr)
        checks = [
            ("detect, steady state: the program completes", p.returncode == 0 and "DONE" in p.stdout),
            ("a race reported for each kernel, high, without the GIL",
             sorted(x["tuner"]["kernel"] for x in races) == ["kernel_a", "kernel_b"] and
             all(x["severity"] == "high" and x.get("gil") == "off" for x in races)),
            ("no fatal record", not any(x["kind"] == "fatal" for x in recs)),
            ("the exit line counts them, more seen than written",
             bool(seen) and int(seen.group(2)) > int(seen.group(1))),
        ]
        for name, cond in checks:
            print(f"{'PASS' if cond else 'FAIL'} round {r}: {name}")
            ok = ok and cond
        if not all(c for _, c in checks):
            print(p.returncode, p.stdout, p.stderr[-3000:], sep="\n----\n")
    # fork while another thread holds the install lock: the child installs a guard of its own
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(args.lib), PYTHON_GIL="0", PYTHONDONTWRITEBYTECODE="1",
               TUNERGUARD_OPTIONS="mode=serialize:targets=tgfix.tuners:Tuner.run")
    p = subprocess.run([args.python, "-W", "ignore::DeprecationWarning", os.path.join(HERE, "ft_fork.py")], env=env,
                       capture_output=True, text=True, timeout=120)
    cond = p.returncode == 0
    print(f"{'PASS' if cond else 'FAIL'} fork inside another thread's install: the child's class guarded "
          f"(exit {p.returncode}; 2: not serialized, 142: its install never got the lock)")
    if not cond:
        print(p.stdout, p.stderr, sep="\n----\n")
    ok = ok and cond
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
