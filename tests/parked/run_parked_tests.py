#!/usr/bin/env python3
"""Another thread's Python stack in a race report (docs/free-threading.md,
"Reading another thread's Python stack"), on one interpreter:

  run_parked_tests.py --lib LIB --python EXE --fakecuda DIR [--gil 0|1]

blocked_in_driver.py: the thread inside is blocked in a CUDA call inside the
tuner's benchmark; the report shows its stack down to the benchmark function.
waiting_in_serialize.py: the thread inside waits in serialize's wait for
another tuner; the report shows its stack down to the function that waits.
running_python.py: the thread inside runs Python code; on a free-threaded
build with the GIL off (--gil 0: PYTHON_GIL=0; the program says whether the
GIL is on, and the check holds it to what was asked) the report shows where
it entered the tuner and says its stack was not read, within the bound; with
the GIL (a GIL build, or --gil 1 on a free-threaded one), its whole stack.  Each child gets LD_PRELOAD
and the stand-in libcuda in its own environment only, and PYTHONMALLOC=debug
(a read of freed memory fails the test).  Exit 0 when every check holds, 1
otherwise, 77 when the interpreter or the stand-in driver is missing."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "integration", "fixtures")
NOT_READ = "<not read: the thread ran on, parked in no CUDA call and no wait of tunerguard's within 50 ms; " \
           "shown where it entered the tuner>"


def run(args, script, mode="detect"):
    tmp = tempfile.mkdtemp(prefix="tg-park-")
    prefix = os.path.join(tmp, "tg")
    env = dict(os.environ, LD_PRELOAD=args.lib, TUNERGUARD_OPTIONS=f"mode={mode}:log_path={prefix}",
               LD_LIBRARY_PATH=os.path.abspath(args.fakecuda))
    env.setdefault("PYTHONMALLOC", "debug")
    if args.gil is not None:
        env["PYTHON_GIL"] = args.gil
    p = subprocess.run([args.python, os.path.join(HERE, script), os.path.abspath(MODEL)], env=env,
                       capture_output=True, text=True, timeout=60)
    text = "".join(open(f).read() for f in glob.glob(prefix + ".*.txt"))
    recs = [json.loads(line) for f in glob.glob(prefix + ".*.jsonl") for line in open(f)]
    return p, text, recs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--fakecuda", required=True, help="directory of the stand-in libcuda.so.1")
    ap.add_argument("--gil", choices=("0", "1"), help="PYTHON_GIL for the children (a free-threaded build)")
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    if not os.path.exists(args.python):
        print(f"skipped: {args.python} not installed")
        return 77
    if not glob.glob(os.path.join(args.fakecuda, "libcuda.so*")):
        print(f"skipped: no stand-in libcuda in {args.fakecuda}")
        return 77
    ok = True

    def check(name, cond, p, text):
        nonlocal ok
        print(f"{'PASS' if cond else 'FAIL'} {name}")
        if not cond:
            ok = False
            print(p.stdout, p.stderr, text, sep="\n----\n")

    p, text, recs = run(args, "blocked_in_driver.py")
    if "free-threaded build, which tunerguard does not serve" in p.stderr:
        print(f"skipped: this library does not serve {args.python}")
        return 77
    gil_off = args.gil == "0"
    gil_word = "False" if gil_off else "True"
    inside = recs[0]["inside"] if len(recs) == 1 else {}
    funcs = [f["func"].split(".")[-1] for f in inside.get("python", [])]  # 3.9, 3.10: no qualname
    check(f"the GIL as asked ({gil_word}), the program completes",
          p.returncode == 0 and f"DONE ok A done True GIL {gil_word}" in p.stdout, p, text)
    check("blocked in a CUDA call: one race, the thread inside shown down to the benchmark function "
          f"({funcs})",
          len(recs) == 1 and recs[0]["kind"] == "race" and inside.get("name") == "A"
          and funcs[:3] == ["benchmark_in_driver", "_bench", "run"]
          and "thread_a_caller" in funcs and inside.get("python_at_entry") is False
          and "benchmark_in_driver" in text and "<not read" not in text, p, text)
    check("blocked in a CUDA call: the CUDA evidence with it (in cuCtxSynchronize, benchmarking)",
          inside.get("benchmarking") is True and (inside.get("cuda") or {}).get("fn", "").startswith("cuCtxSynchronize"),
          p, text)

    p, text, recs = run(args, "running_python.py")
    inside = recs[0]["inside"] if len(recs) == 1 else {}
    funcs = [f["func"].split(".")[-1] for f in inside.get("python", [])]  # 3.9, 3.10: no qualname
    m = re.search(r"entered in ([0-9.]+) s", p.stdout)
    entered = float(m.group(1)) if m else 1e9
    check(f"the GIL as asked ({gil_word}), the program completes",
          p.returncode == 0 and f"DONE ok A done True GIL {gil_word}" in p.stdout, p, text)
    if gil_off:
        check(f"running Python without the GIL: its stack is not read, the report shows where it entered "
              f"and says so ({funcs}), the entry within the bound and more ({entered:.3f} s)",
              len(recs) == 1 and recs[0]["kind"] == "race" and inside.get("python_at_entry") is True
              and funcs == ["thread_a_caller"] and NOT_READ in text and "spin_in_python" not in text
              and 0.05 <= entered < 5.0, p, text)
    else:
        check(f"running Python with the GIL: its whole stack ({funcs})",
              len(recs) == 1 and recs[0]["kind"] == "race" and inside.get("python_at_entry") is False
              and funcs[:3] == ["spin_in_python", "_bench", "run"]
              and "<not read" not in text, p, text)

    p, text, recs = run(args, "waiting_in_serialize.py", "serialize")
    races = [r for r in recs if r["kind"] == "race"]  # A's entry into Y, then the main thread's into X
    x_races = [r for r in races if r["tuner"]["kernel"] == "kernel_x" and r["seen_at"] == "entry"]
    inside = x_races[0]["inside"] if len(x_races) == 1 else {}
    funcs = [f["func"].split(".")[-1] for f in inside.get("python", [])]
    check(f"the GIL as asked ({gil_word}), the program completes",
          p.returncode == 0 and f"DONE x A done True C done True GIL {gil_word}" in p.stdout, p, text)
    check(f"waiting in tunerguard's own wait (serialize): the race the wait prevents shows the thread inside "
          f"down to the function that waits ({funcs})",
          len(x_races) == 1 and x_races[0]["serialized"] and inside.get("name") == "A"
          and funcs[:3] == ["calls_y", "_bench", "run"] and "thread_a_caller" in funcs
          and inside.get("python_at_entry") is False, p, text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
