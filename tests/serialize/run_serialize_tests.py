#!/usr/bin/env python3
"""Safety tests on one interpreter: serialize mode (deadlock cycle, long wait),
threads that die inside a tuner, reports under thread-switch storms, a race
followed by a segfault, and guard transparency (patch/restore of a method).

  run_serialize_tests.py --lib LIB --python EXE

Each child gets LD_PRELOAD in its own environment only, and Python's debug
allocator hooks (PYTHONMALLOC=debug, unless the environment names an
allocator): memory tunerguard reads after CPython freed it is overwritten at
once, so such a read crashes the test instead of passing unseen.  Exit 0
when every check holds, 1 otherwise, 77 when the interpreter is missing."""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "free_threaded"))
from regime import Regime, add_argument as add_regime_argument  # noqa: E402


def run(args, script, opts, extra=(), env_extra=None, fsize=None, files=None):
    tmp = tempfile.mkdtemp(prefix="tg-ser-")
    prefix = os.path.join(tmp, "tg")
    env = dict(os.environ, LD_PRELOAD=args.lib, TUNERGUARD_OPTIONS=f"mode=serialize:log_path={prefix}:targets=tgfix.tuners:Tuner.run:{opts}")
    env.setdefault("PYTHONMALLOC", "debug")
    env.update(env_extra or {})
    args.regime.apply(env)

    def limit():  # ulimit -f: writes past it fail with EFBIG (Python ignores SIGXFSZ)
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    p = subprocess.run([args.python, os.path.join(HERE, script), *[a.replace("PREFIX", prefix) for a in extra]],
                       env=env, capture_output=True, text=True, timeout=60, preexec_fn=limit if fsize else None)
    if files is not None:
        files.extend(sorted(os.listdir(tmp)))
    text = "".join(open(f).read() for f in glob.glob(prefix + ".*.txt"))
    jsonl = [line for f in glob.glob(prefix + ".*.jsonl") for line in open(f)]
    return p, text, jsonl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--fakecuda", help="directory of the stand-in libcuda.so.1 (sync_holder.py)")
    add_regime_argument(ap)
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    if not os.path.exists(args.python):
        print(f"SKIP: interpreter {args.python} not installed")
        return 77
    args.regime = Regime(args.gil_regime)
    why = args.regime.check_interpreter(args.python)
    if why:
        print(f"FAIL: {why}")
        return 1
    ok = True

    def check(name, cond, p, text):
        nonlocal ok
        print(f"{'PASS' if cond else 'FAIL'} {name}")
        if not cond:
            ok = False
            print(p.stdout, p.stderr, text, sep="\n----\n")

    import json
    p, text, jsonl = run(args, "deadlock.py", "deadlock=proceed")
    kinds = [json.loads(x)["kind"] for x in jsonl]
    check("deadlock=proceed: program completes", p.returncode == 0, p, text)
    check("deadlock=proceed: cycle reported once", kinds.count("deadlock") == 1 and
          "cycle of serialized waits" in text and "kernel_a" in text and "kernel_b" in text, p, text)
    check("deadlock=proceed: report says the youngest proceeded", "proceeds unserialized" in text, p, text)
    dl = [r for r in map(json.loads, jsonl) if r["kind"] == "deadlock"]
    cyc = dl[0]["cycle"] if dl else []
    check("deadlock=proceed: the record names the cycle as fields: both kernels, each held by a thread, "
          "the last by the waiting thread, policy proceed",
          len(dl) == 1 and sorted(c["kernel"] for c in cyc) == ["kernel_a", "kernel_b"]
          and all(c["holder_tid"] for c in cyc) and cyc[-1]["holder_tid"] == dl[0]["entering"]["tid"]
          and dl[0]["policy"] == "proceed", p, text)

    p, text, jsonl = run(args, "deadlock.py", "deadlock=abort:exitcode=9")
    check("deadlock=abort: process stops with exitcode after the report",
          p.returncode == 9 and "deadlock=abort" in text, p, text)

    p, text, jsonl = run(args, "wait_timeout.py", "wait_timeout=1:on_wait_timeout=wait", ["PREFIX"])
    kinds = [json.loads(x)["kind"] for x in jsonl]
    check("wait_timeout: long wait reported, names the holder, wait goes on (on_wait_timeout=wait)",
          p.returncode == 0 and kinds.count("wait_timeout") == 1 and "Holding the tuner: thread 'holder'" in text
          and "the wait goes on (on_wait_timeout=wait)" in text, p, text)

    # A deadlock through a lock of the program's: the holder waits (inside
    # the tuner) for a threading.Lock the waiter holds.  Past wait_timeout the
    # waiter finds the holder blocked and proceeds (it hung for good before).
    # The tuner is declared (targets=): the waiter's entry is also a race
    # the wait prevented, reported first.
    def waited(p):  # the exit line's total wait, s
        m = re.search(r"waited ([0-9.]+) s in total", p.stderr)
        return float(m.group(1)) if m else -1.0
    p, text, jsonl = run(args, "user_lock.py", "wait_timeout=1")
    recs = [json.loads(x) for x in jsonl]
    check("a holder blocked on a lock the waiter holds: past wait_timeout the waiter proceeds unserialized, "
          f"the program ends, one wait_timeout report says so (waited {waited(p):.3f} s)",
          p.returncode == 0 and [r["kind"] for r in recs] == ["race", "wait_timeout"] and recs[0]["serialized"]
          and recs[1]["proceeds"] and recs[1]["stalled_ns"] > 0 and recs[1]["waited_ns"] >= 10**9
          and recs[1]["wait_timeout_s"] == 1 and "this thread proceeds unserialized" in text
          and "blocked outside tunerguard" in text and waited(p) >= 1.0, p, text)
    p, text, jsonl = run(args, "user_lock.py", "wait_timeout=1:on_wait_timeout=wait", ["3"])
    check("on_wait_timeout=wait: the waiter waits on (the holder gives up its lock wait after 3 s)",
          p.returncode == 1 and "('holder', False)" in p.stdout and "the wait goes on (on_wait_timeout=wait)" in text,
          p, text)
    p, text, jsonl = run(args, "busy_holder.py", "wait_timeout=1")
    recs = [json.loads(x) for x in jsonl]
    check(f"a holder that runs past wait_timeout is waited for, one report says so ({p.stdout.strip()})",
          p.returncode == 0 and [r["kind"] for r in recs] == ["race", "wait_timeout"] and recs[0]["serialized"]
          and not recs[1]["proceeds"] and recs[1]["stalled_ns"] is None
          and recs[1]["on_wait_timeout"] == "proceed" and "the wait goes on while the holder runs" in text, p, text)
    p, text, jsonl = run(args, "user_lock.py", "mode=detect", ["3"])
    check("detect: the same program finishes", p.returncode == 0, p, text)
    # A wait cut short by Ctrl-C: its time counts to its real end (the exit
    # line said 0.100 s, the turn's wait alone, after 0.93 s).
    p, text, jsonl = run(args, "interrupted_wait.py", "verbosity=0")
    m = re.search(r"waited at least ([0-9.]+)", p.stdout)
    real = float(m.group(1)) if m else 1e9
    check(f"an interrupted wait is counted to its end: the exit line's {waited(p):.3f} s >= the {real:.3f} s "
          "the main thread waited", p.returncode == 0 and waited(p) >= real - 0.002, p, text)
    # (2 ms: the exit line's rounding, and the microseconds between the turn's
    # wait and the tuner's, which the bound counts and the waits do not)
    p, text, jsonl = run(args, "fairness.py", "verbosity=0")
    check("serialize is fair: a waiting thread runs before a quarter of a looping thread's calls "
          f"({p.stdout.strip()})", p.returncode == 0, p, text)
    p, text, jsonl = run(args, "own_exception.py", "exitcode=9")
    kinds = [json.loads(x)["kind"] for x in jsonl]
    check("serialize: a call's own exception after its wait is not linked to the prevented race; "
          f"exitcode=9 not set by it (kinds {kinds})",
          p.returncode == 0 and "exception" not in kinds and "race" in kinds
          and all(json.loads(x).get("serialized") for x in jsonl if json.loads(x)["kind"] == "race"), p, text)
    p, text, jsonl = run(args, "turn_bypass.py", "verbosity=0")
    check(f"serialize's turn is bypassed after its bound: no deadlock across tuners ({p.stdout.strip()})",
          p.returncode == 0, p, text)
    for when in ("", "late"):
        p, text, jsonl = run(args, "finalizer_call.py", "verbosity=0", extra=(when,) if when else ())
        check(f"serialize does not wait at finalization: a {when + ' ' if when else ''}__del__'s call goes in "
              f"though a daemon thread never leaves the tuner (rc {p.returncode})",
              p.returncode == 0 and "del ok" in p.stdout, p, text)
        inside = [json.loads(x).get("inside") or {} for x in jsonl]
        check(f"at finalization ({when or 'modules cleared'}) the daemon's Python stack is not read (CPython "
              f"released its state): the report says so",
              "fatal signal" not in p.stderr and "<not readable: the interpreter was finalizing" in text
              and len(inside) == 1 and inside[0].get("python_unreadable") is True and inside[0].get("python") == [],
              p, text)
    p, text, jsonl = run(args, "turn_other_kernel.py", "targets=tgfix.homegrown:HomeTuner.run:"
                         "tuning=tgfix.homegrown:HomeTuner.measure")
    check(f"serialize's turn never holds up a tuner nobody is in while another thread tunes ({p.stdout.strip()})",
          p.returncode == 0 and "serialized" not in p.stderr, p, text)
    for where in ("outside", "inside"):
        p, text, jsonl = run(args, "fork_inside_call.py", "verbosity=0", extra=(where,))
        check(f"fork {where} a guarded call: the child's calls are still serialized",
              p.returncode == 0 and "returned after P left" in p.stdout, p, text)

    p, text, jsonl = run(args, "bad_targets.py",
                         "targets=tgfix.nested:leaf.run,tgfix.lazy:A.run,tgfix.lazy:B.run",
                         env_extra={"PYTHONMALLOC": "debug"})
    check("targets= naming a module as a class, and a module that replaces itself while looked up: "
          "no crash, one line for the module, both lazy classes guarded",
          p.returncode == 0 and "leaf is a module, not a class" in p.stderr and p.stderr.count("tunerguard:") == 1
          and "guarded: guard guard" in p.stdout, p, text)

    p, text, jsonl = run(args, "replaced_callable.py", "verbosity=0")
    check("Tuner.run replaced by a callable object: no C API call with an error pending",
          p.returncode == 0 and "pending errors seen: []" in p.stdout, p, text)

    p, text, jsonl = run(args, "finder_raises.py", "verbosity=0")
    check("a finder after ours raising for a target module: the import fails with its exception",
          p.returncode == 0, p, text)

    p, text, jsonl = run(args, "fork_in_report.py", "mode=detect")
    check("fork while another thread holds the report lock: the child's report is written, its call returns "
          f"({p.stdout.strip()})", p.returncode == 0, p, text)
    for how in ("self", "other", "parked"):
        p, text, jsonl = run(args, "interrupt.py", "verbosity=0", [how])
        to = {"self": "the process", "other": "another thread",
              "parked": "another thread while the main thread is parked in the tuner's wait"}[how]
        check(f"serialize wait interruptible, SIGINT to {to}: "
              "KeyboardInterrupt while the holder is inside, the queue intact after", p.returncode == 0, p, text)
    # A kernel called from a signal handler (or an audit hook) on the main
    # thread while it waits for that kernel's tuner: the call waits for the
    # holder too (it went in past it, unguarded, and the holder's call
    # raised the TypeError, with no race counted).
    for script, who in (("handler_alarm.py", "a SIGALRM handler (setitimer)"),
                        ("handler_kill.py", "a SIGUSR1 handler (signal.pthread_kill from a thread)"),
                        ("handler_audit.py", "an audit hook on the wait's event")):
        p, text, jsonl = run(args, script, "verbosity=0")
        recs = [json.loads(x) for x in jsonl]
        check(f"serialize, {who} calling the kernel the main thread waits for: that call waits for the holder, "
              f"a prevented race ({p.stdout.strip()})",
              p.returncode == 0 and "['A', 'handler', 'main']" in p.stdout
              and "1 race prevented by serialize (2 seen)" in p.stderr
              and [r["kind"] for r in recs] == ["race", "repeats"] and recs[0]["serialized"], p, text)
        p, text, jsonl = run(args, script, "mode=detect")
        kinds = [json.loads(x)["kind"] for x in jsonl]
        check(f"detect, {who} calling the kernel while another thread is inside: the race reported, named at "
              f"the handler ({kinds})",
              p.returncode == 3 and kinds[:1] == ["race"] and "1 race reported (1 seen)" in p.stderr
              and " handler  " in text, p, text)
    p, text, jsonl = run(args, "handler_nested.py", "verbosity=0")
    check("serialize, a SIGALRM handler calling a kernel whose tuner the waiting main thread is inside: a nested "
          f"level, no wait, no race ({p.stdout.strip()})",
          p.returncode == 0 and "1 race prevented by serialize (1 seen)" in p.stderr, p, text)
    p, text, jsonl = run(args, "handler_interrupt.py", "verbosity=0")
    check(f"serialize, Ctrl-C while a handler's call waits inside the main thread's wait: KeyboardInterrupt out "
          f"of the main thread's call, the tuner entered again after ({p.stdout.strip()})", p.returncode == 0, p, text)
    for opts in ("mode=detect:verbosity=1", "mode=serialize:verbosity=1"):
        p, text, jsonl = run(args, "switch_storm.py", opts)
        check(f"{opts}: 300 overlaps with the holder leaving during the report, thread switches every 1 us",
              p.returncode == 0 and all(json.loads(x)["schema"] == 2 for x in jsonl), p, text)
    if args.fakecuda:
        # Severity from the CUDA record alone: the holder of a targets= tuner
        # blocked in cuCtxSynchronize, no tuning-named frame.
        p, text, jsonl = run(args, "sync_holder.py", "mode=detect",
                             env_extra={"LD_LIBRARY_PATH": os.path.abspath(args.fakecuda)})
        recs = [json.loads(x) for x in jsonl]
        check("a targets= tuner whose holder is in cuCtxSynchronize (no tuning frames): a high-severity race",
              p.returncode == 0 and [r["kind"] for r in recs] == ["race"] and recs[0].get("severity") == "high"
              and "cuCtxSynchronize" in text, p, text)
        # ... and whatever its launch count: a declared tuner (targets=) with
        # no tuning step named races on every overlap.
        for n, sev in ((2, "high"), (1, "high")):
            p, text, jsonl = run(args, "launch_holder.py", "mode=detect", [str(n)],
                                 env_extra={"LD_LIBRARY_PATH": os.path.abspath(args.fakecuda)})
            recs = [json.loads(x) for x in jsonl]
            check(f"a targets= tuner whose holder launched {n} kernel(s) in its session: a high-severity race",
                  p.returncode == 0 and [r.get("severity") for r in recs] == ([sev] if sev else []), p, text)
        # The same evidence on a marked tuner (Triton's Autotuner), where the
        # entering thread learns of it only through the holder's evidence
        # bits: the CUDA hook's (two launches, a synchronize) and a warmup's.
        # Without the GIL the calls run at once: the fast path's one launch
        # is a race too (docs/free-threading.md).
        nogil = args.gil_regime == "nogil"
        for how, sev in (("launch2", "high"), ("launch1", "high" if nogil else None), ("sync", "high"),
                         ("warmup", "high")):
            p, text, jsonl = run(args, "marked_evidence.py", "mode=detect", [how],
                                 env_extra={"LD_LIBRARY_PATH": os.path.abspath(args.fakecuda)})
            recs = [json.loads(x) for x in jsonl]
            check(f"a marked tuner whose holder is inside ({how}): "
                  + ("a high-severity race" if sev else "an overlap, not reported"),
                  p.returncode == 0 and [r.get("severity") for r in recs] == ([sev] if sev else []), p, text)
        # A third thread entering while the benchmarking holder is still
        # inside: high severity, whichever slot the fast-path second took.
        p, text, jsonl = run(args, "third_entrant.py", "mode=detect:verbosity=2",
                             env_extra={"LD_LIBRARY_PATH": os.path.abspath(args.fakecuda)})
        recs = [json.loads(x) for x in jsonl]
        check(f"a third entrant while the holder benchmarks: two high-severity races ({p.stdout.strip()})",
              p.returncode == 0 and [r.get("severity") for r in recs] == ["high", "high"], p, text)
        # The same at verbosity 0, where the severity decides whether there is a report at all.
        p, text, jsonl = run(args, "third_entrant.py", "mode=detect",
                             env_extra={"LD_LIBRARY_PATH": os.path.abspath(args.fakecuda)})
        recs = [json.loads(x) for x in jsonl]
        check(f"verbosity 0: the third entrant's race with the benchmarking holder reported ({p.stdout.strip()})",
              p.returncode == 0 and [r.get("severity") for r in recs] == ["high", "high"]
              and all(r["inside"]["name"] == "A" for r in recs), p, text)
    for mode in ("detect", "serialize"):
        p, text, jsonl = run(args, "holder_died.py", f"mode={mode}")
        kinds = [json.loads(x)["kind"] for x in jsonl]
        check(f"{mode}: a thread that died inside a tuner is found, its hold released, reported once",
              p.returncode == 0 and kinds == ["holder_died"] and "thread died inside a tuner" in text, p, text)
        # The new thread first, on the dead thread's stack (so its tunerguard
        # record): the same record with another tid is not nesting.
        p, text, jsonl = run(args, "holder_died.py", f"mode={mode}", ["new-first"])
        recs = [json.loads(x) for x in jsonl]
        check(f"{mode}: a new thread on the dead holder's record (entering first) is not taken for it: "
              "it finds the holder dead",
              p.returncode == 0 and "record reused True" in p.stdout and [r["kind"] for r in recs] == ["holder_died"]
              and recs[0]["entering"]["name"] == "new-thread" and "thread died inside a tuner" in text, p, text)
    # The holder waits on an Event inside a declared tuner (targets=): the
    # overlap is a race, and the crashing session is linked to it.
    p, text, jsonl = run(args, "race_segv.py", "mode=detect:verbosity=1")
    race_at = text.find("WARNING: tunerguard: thread entered a tuner")
    fatal_at = text.find("fatal signal SIGSEGV")
    recs = [json.loads(x) for x in jsonl]
    check("a race then a segfault: dies by SIGSEGV, the race report complete before the fatal block",
          p.returncode == -11 and 0 <= race_at < fatal_at and "SUMMARY: tunerguard: tuner race" in text
          and [r["kind"] for r in recs] == ["race", "fatal"] and recs[0]["severity"] == "high"
          and recs[1]["race_seq"] == recs[0]["seq"], p, jsonl)
    # The same with the files limited to 3000 bytes (a full disk): the race's
    # JSON line does not fit (JSON Lines off, said once), nor does the fatal
    # block: it goes to stderr whole after one line, and the fatal handler
    # makes no new .jsonl (it made an empty tg.<pid>.<id>.jsonl before, and
    # cut the block silently).
    names = []
    p, text, jsonl = run(args, "race_segv.py", "mode=detect:verbosity=1", fsize=3000, files=names)
    check("a race then a segfault on a full disk: the fatal block on stderr after one line, no new file",
          p.returncode == -11 and "could not be written in full to its file" in p.stderr
          and "SUMMARY: tunerguard: fatal signal SIGSEGV" in p.stderr
          and len(names) == 2 and all(n.count(".") == 2 for n in names), p, names)
    # A high-severity race, then the thread that entered second dies inside
    # that session: the fatal record names the tuner and links the report.
    p, text, jsonl = run(args, "race_segv.py", "mode=detect", ["bench"])
    recs = [json.loads(x) for x in jsonl]
    race, fatal = (recs + [{}, {}])[:2]
    check("a race while benchmarking, then a segfault inside that session: the fatal record links the race",
          p.returncode == -11 and [r.get("kind") for r in recs] == ["race", "fatal"]
          and race["severity"] == "high" and fatal["signal"] == "SIGSEGV"
          and fatal["race_seq"] == race["seq"] and fatal["reports_before"] == 1
          and fatal["tuner"]["instance"] == race["tuner"]["instance"]
          and fatal["tid"] == race["entering"]["tid"]
          and f"in a session that raced with thread 'holder' (tid={race['inside']['tid']}): race report "
              f"#{race['seq']} of this process" in text, p, jsonl)
    # A tuned call that registered nothing (detect's unregistered session)
    # dies inside: the fatal record names its tuner all the same.
    p, text, jsonl = run(args, "tuned_segv.py", "mode=detect")
    recs = [json.loads(x) for x in jsonl]
    inst = next((ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("instance ")), None)
    check("a segfault inside a tuned call of detect's unregistered session: the fatal record names its tuner",
          p.returncode == -11 and [r.get("kind") for r in recs] == ["fatal"] and inst is not None
          and (recs[0].get("tuner") or {}).get("instance") == inst and f"was inside tuner instance {inst}" in text,
          p, jsonl)
    # Eight threads crash at once: the report is still written whole (it was
    # lost when a losing thread chained before the winner was done).
    p, text, jsonl = run(args, "crash_together.py", "mode=detect:verbosity=1")
    kinds = [json.loads(x)["kind"] for x in jsonl]
    check("eight threads crash at once: dies by SIGSEGV, the fatal block and record written",
          p.returncode == -11 and "fatal signal SIGSEGV" in text and kinds.count("fatal") == 1
          and "SUMMARY: tunerguard: fatal signal" in text, p, jsonl)
    declared_tuner_checks(args, check)
    for mode in ("detect", "serialize"):
        p, text, jsonl = run(args, "restore.py", f"mode={mode}")
        check(f"{mode}: save, patch and restore a guarded method; Class.method(obj); super()",
              p.returncode == 0 and not text, p, text)
    held, said = args.regime.verify()
    if said:
        print(f"{'PASS' if held else 'FAIL'} {said}")
    return 0 if ok and held else 1


def declared_tuner_checks(args, check):
    """A home-grown tuner declared with targets= (declared_tuner.py): per-call
    state on the shared object, a blocking wait inside, no Triton, no CUDA."""
    import json
    decl = "targets=tgfix.homegrown:HomeTuner.run"
    script = os.path.join(HERE, "declared_tuner.py")
    p = subprocess.run([args.python, script, "inside"], capture_output=True, text=True, timeout=60,
                       env=args.regime.apply(dict(os.environ)))
    check("declared tuner without tunerguard: the TypeError (exit 3)", p.returncode == 3, p, "")

    def races(jsonl):
        return [r for r in map(json.loads, jsonl) if r["kind"] == "race"]
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}", ["inside"])
    rs, kinds = races(jsonl), [json.loads(x)["kind"] for x in jsonl]
    check("detect: a declared tuner's overlap is one high-severity race naming HomeTuner.run, its TypeError linked",
          p.returncode == 3 and kinds == ["race", "exception"] and rs[0]["severity"] == "high"
          and rs[0]["tuner"]["method"] == "HomeTuner.run" and rs[0]["tuner"]["declared"] is True
          and rs[0]["tuning_step"] is None and not rs[0]["serialized"]
          and "In short: tuner tgfix.homegrown.HomeTuner (method HomeTuner.run)" in text and "?" not in text
          and "declared with targets= (HomeTuner.run)" in text and "inside it benchmarking" not in text
          and "once from one thread" not in text and rs[0]["tuner"]["kernel"] is None
          and "tunerguard: 1 race reported (1 seen)" in p.stderr, p, text)
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:exitcode=5:{decl}", ["inside"])
    check("detect, exitcode=5: the declared tuner's race sets the exit status", p.returncode == 5, p, text)
    p, text, jsonl = run(args, "declared_tuner.py", decl, ["serialize"])
    rs = races(jsonl)
    check("serialize: the declared tuner's second call waits: no TypeError, one prevented race",
          p.returncode == 0 and len(jsonl) == 1 and len(rs) == 1 and rs[0]["serialized"]
          and rs[0]["severity"] == "high" and "race prevented (serialize)" in text, p, text)
    step = "tuning=tgfix.homegrown:HomeTuner.measure"
    # A waits in run() before its step; B enters run() (not a race yet: nobody is in the step), then
    # its step, while A's call, which reads the state in its own step next, is inside: the race,
    # seen at B's step.  A's TypeError is linked to it.
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}:{step}", ["outside"])
    rs, kinds = races(jsonl), [json.loads(x)["kind"] for x in jsonl]
    check("tuning= names measure: B entering its step while A, before its own, is inside: a race seen at the step",
          p.returncode == 3 and kinds == ["race", "exception"] and rs[0]["severity"] == "high"
          and rs[0]["seen_at"] == "step" and rs[0]["tuning_step"] == "HomeTuner.measure"
          and rs[0]["entering"]["name"] == "B" and rs[0]["inside"]["name"] == "A"
          and "entering its tuning step HomeTuner.measure" in text
          and "tunerguard: 1 race reported (1 seen), 1 exception linked" in p.stderr, p, text)
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:verbosity=1:exitcode=7:{decl}:{step}", ["outside"])
    rs = races(jsonl)
    check("tuning= names measure, verbosity=1: B's entry while A is outside the step is a low-severity overlap, "
          "in the declared tuner's words; its step is the race; exitcode=7 applied",
          p.returncode == 7 and [(r["severity"], r["seen_at"]) for r in rs] == [("low", "entry"), ("high", "step")]
          and "Severity: low: the thread inside was not in the tuner's tuning step" in text
          and "tuned key" not in text, p, text)
    # After its step returned (still in run): not in the step, whatever it did there.
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}:{step}", ["after"])
    check("tuning= names measure: an overlap after it returned is not reported", p.returncode == 0 and not jsonl,
          p, text)
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}:{step}", ["inside"])
    rs = races(jsonl)
    check("tuning= names measure: an overlap inside it is a race naming the step",
          p.returncode == 3 and len(rs) == 1 and rs[0]["severity"] == "high"
          and rs[0]["tuning_step"] == "HomeTuner.measure"
          and "was inside it in its tuning step HomeTuner.measure" in text, p, text)
    # A subclass overriding the step: its measure() is the step too.
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}:{step}", ["sub_inside"])
    rs = races(jsonl)
    check("tuning= names HomeTuner.measure: a subclass's own measure() is its step; an overlap inside it is a race",
          p.returncode == 3 and len(rs) == 1 and rs[0]["severity"] == "high"
          and rs[0]["tuning_step"] == "SubTuner.measure", p, text)
    # A's call on this tuner, before its step, made from another tuner's call whose step has run:
    # A has yet to run this one's step, so B's step entry is the race.
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}:{step}", ["nested_outside"])
    rs = races(jsonl)
    check("tuning= names measure: A inside after another tuner's step ran, before this one's: B's step entry "
          "is a race", p.returncode == 3 and len(rs) == 1 and rs[0]["seen_at"] == "step", p, text)
    # Subclasses whose step cannot be marked: one line for the first, never one per class.
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}:{step}", ["static_steps"])
    said = [x for x in p.stderr.splitlines() if x.startswith("tunerguard:")]
    check("5 subclasses whose step is a staticmethod: one line, naming the first", p.returncode == 0
          and len(said) == 1 and "__main__.S0.measure, a subclass's, is no plain method" in said[0], p, text)
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}:{step}", ["many_steps"])
    said = [x for x in p.stderr.splitlines() if x.startswith("tunerguard:")]
    check("300 subclasses with their own step, past the table of guards: the one line that says so",
          p.returncode == 0 and len(said) == 1 and "guarded methods" in said[0], p, text)
    # A step the targets= class inherits: marked where it is defined, named there.
    inh = "targets=tgfix.late:Inherits.run:tuning=tgfix.late:Inherits.measure"
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{inh}", ["inherited_outside"])
    rs = races(jsonl)
    check("tuning= names a step the class inherits: marked on its base, the race seen at it",
          p.returncode == 3 and len(rs) == 1 and rs[0]["seen_at"] == "step"
          and rs[0]["tuning_step"] == "MeasureBase.measure" and "no plain method" not in p.stderr, p, text)
    # The step replaced by a wrapper after the class was armed: the wrapper is the step.
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{decl}:{step}", ["replaced_outside"])
    rs = races(jsonl)
    check("tuning= names measure, replaced by a wrapper: B entering the wrapper while A is inside is a race "
          "seen at the step", p.returncode == 3 and len(rs) == 1 and rs[0]["seen_at"] == "step"
          and rs[0]["tuning_step"] == "HomeTuner.measure", p, text)
    # Forty subclasses with their own step made (20 kept, 20 freed), then another declared tuner
    # imported: its step is still marked (the subclasses took no room, the freed ones left nothing).
    both = f"{decl},tgfix.late:LateTuner.run:{step},tgfix.late:LateTuner.measure"
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{both}",
        ["late_outside"])
    rs = races(jsonl)
    check("40 subclasses of a declared tuner made, 20 freed, then another declared tuner: its step is marked, "
          "the race seen there", p.returncode == 3 and len(rs) == 1 and rs[0]["seen_at"] == "step"
          and rs[0]["tuning_step"] == "LateTuner.measure" and "more than" not in p.stderr, p, text)
    # A base without the step, its subclasses with their own: each subclass is followed while it
    # lives; a freed one's place is taken again, and past 16 live ones a line says what is lost.
    sl = "targets=tgfix.late:StepLess.run:tuning=tgfix.late:StepLess.measure"
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{sl}", ["stepless_freed"])
    rs = races(jsonl)
    check("30 subclasses with their own step freed, then another: its step is followed, the race seen there",
          p.returncode == 3 and len(rs) == 1 and rs[0]["seen_at"] == "step"
          and rs[0]["tuning_step"] == "Sub99.measure" and "tuner classes with tuning steps" not in p.stderr,
          p, text)
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:{sl}", ["stepless_kept"])
    rs = races(jsonl)
    past = [x for x in p.stderr.splitlines() if "tuner classes with tuning steps" in x]
    check("20 live subclasses with their own step: one line names the first past the table; its entry "
          "overlap is a race", p.returncode == 3 and len(past) == 1
          and past[0].startswith("tunerguard: tuning=: __main__.Sub") and rs and rs[0]["seen_at"] == "entry",
          p, text)
    # Two threads calling it in a loop: one report, every later overlap
    # counted as its repeat (decided before the capture: race_again.c).
    loop = os.path.join(HERE, "..", "..", "bench", "declared_contended.py")
    p, text, jsonl = run(args, loop, f"mode=detect:targets=tgfix.tuners:Tuner.run", ["0.3", "--overlap", "3"])
    recs = [json.loads(x) for x in jsonl]
    seen = re.search(r"1 race reported \((\d+) seen\)", p.stderr)
    check("a declared tuner called in a loop by two threads: one race report, the others counted as its repeats",
          p.returncode == 0 and [r["kind"] for r in recs] == ["race", "repeats"] and seen
          and recs[1]["repeats"] == int(seen.group(1)) - 1 > 0
          and recs[0]["tuner"]["declared"] is True and recs[1]["tuner"]["declared"] is True, p, text)
    supp = os.path.join(tempfile.mkdtemp(prefix="tg-ser-"), "supp.txt")
    with open(supp, "w") as f:
        f.write("race:^HomeTuner.run$\n")
    p, text, jsonl = run(args, "declared_tuner.py", f"mode=detect:exitcode=5:suppressions={supp}:{decl}", ["inside"])
    check("a suppression naming HomeTuner.run: no report, the program's own status", p.returncode == 3 and not jsonl,
          p, text)


if __name__ == "__main__":
    sys.exit(main())
