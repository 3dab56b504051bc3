#!/usr/bin/env python3
"""Run the CPU reproducers (tests/repro/scenarios/*.py) under each mode and check
the outcome each mode must have.

  none       no tunerguard                  -> the race shows: exit 1
  detect     LD_PRELOAD=<lib>, mode=detect  -> <log>.<pid>.txt has a race report on the
                                               kernel ("SUMMARY: tunerguard: tuner race
                                               on 'K'"; the program may still fail:
                                               detect does not prevent)
  serialize  LD_PRELOAD=<lib>, mode=serialize -> exit 0, results correct
  control    no tunerguard, --control-lock  -> exit 0 (the hand-written lock fixes it;
                                               shows the model is faithful)

LD_PRELOAD and TUNERGUARD_OPTIONS are set in the child's environment only, and
removed from it for the none/control modes. The child gets
LD_LIBRARY_PATH=<fakecuda dir> and runs in a fresh temporary directory, with
TMPDIR a private folder in it: a child that ends on its own (not killed for
its timeout) and leaves anything there fails, so a scenario removes what it
creates in the temporary folder, whatever its exit status.

The Triton the children import: the model in tests/repro/model (TG_TRITON_MODEL, the
default), or, with --triton-release X.Y.Z, the release installed in --python's
environment (TG_TRITON_RELEASE=1: its own triton.runtime.autotuner, driven through
the stand-in kernel, driver and do_bench of standin/triton_standin.py); the run
first checks that that interpreter imports triton X.Y.Z.

Exit status: 0 all outcomes as expected; 1 some differ; 2 usage error;
77 (--skip-if-missing and the interpreter is absent: ctest's SKIP_RETURN_CODE).
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "free_threaded"))
from regime import Regime, add_argument as add_regime_argument  # noqa: E402
SCENARIO_DIR = os.path.join(HERE, "scenarios")

# scenario -> (the kernel function name a report must name, what the failure without tunerguard says)
NONE_IS_NOT_A_MAPPING = "TypeError: 'NoneType' object is not a mapping"
SCENARIOS = {
    "seeds004": ("test_seed004", NONE_IS_NOT_A_MAPPING),
    "cached_subclass": ("l2norm_fwd_kernel", NONE_IS_NOT_A_MAPPING),
    "hammer": ("hammer_kernel", NONE_IS_NOT_A_MAPPING),
    "attributes": ("attributes_kernel", NONE_IS_NOT_A_MAPPING),
    "reset_to_zero": ("accumulate_kernel", "wrong numbers in thread tuner"),
    "fast_path_first": ("fast_first_kernel", NONE_IS_NOT_A_MAPPING),
    "disk_cache": ("disk_cache_kernel", NONE_IS_NOT_A_MAPPING),
    "pruned_single": ("pruned_single_kernel", NONE_IS_NOT_A_MAPPING),
    "signal_handler": ("signal_handler_kernel", NONE_IS_NOT_A_MAPPING),
    # other tuners (docs/tuners.md): fla-core 0.6.0's CachedAutotuner from its wheel (TG_FLA_WHEEL,
    # run_wheel_repro.py), and the model of Inductor's CachingAutotuner (torch 2.15.0)
    "fla_cached_autotuner": ("fla_l2norm_kernel", NONE_IS_NOT_A_MAPPING),
    "inductor_caching_autotuner": ("inductor_pointwise_kernel",
                                   "AssertionError: Autotuned launcher config does not match any compile result"),
}
# The other tuners' scenarios: built on the model's Triton (Inductor's) or a wheel of their
# own (fla-core's, TG_FLA_WHEEL); left out of the default list with --triton-release.
OTHER_TUNERS = ("fla_cached_autotuner", "inductor_caching_autotuner")
# The Triton versions the model has (TG_TRITON_MODEL, model/triton/_model.py); the
# releases themselves run with --triton-release.
TRITON_MODELS = ("3.6", "main", "unknown")  # unknown: main with the graded names renamed
# Scenarios with options and an expectation of their own, run once per run
# (mode "extra") instead of the none/detect/serialize matrix:
#   race          the text report has a race ("thread entered a tuner another
#                 thread is inside") naming the kernel, in EVERY run
#   race_at_exit  ... a race seen when the call inside returned ("a call left a
#                 tuner while another thread was benchmarking in it")
#   race_any      either of the two (the scenario's check says which one it must be)
#   race_kind     any race report: either of the two, or a call's arguments cleared
#                 before it began tuning (which of them the scheduler's order gives)
#   interference  the text report has "tuning under load" naming the kernel
#   clean         no report file at all, no "tunerguard:" line on stderr, exit 0
#   no_race       the program ends as without tunerguard (exit `rc`, default 1), and
#                 no report (text or JSON) is a race or an exception linked to one
# `nogil`: what replaces the spec's expect and check where the children run
# without the GIL (--gil-regime nogil).  There two calls of Triton's Autotuner
# run at once and clear each other's arguments on a tuned key too, so the
# entry of the second is the race (docs/free-threading.md), whatever the
# scenario's choreography makes of it later (a return under a benchmark, an
# argument cleared before tuning, or nothing).
NOGIL_ENTRY = dict(expect="race", check="race_without_gil")
EXTRA = {
    # an Autotuner whose tuning methods have other names (TG_TRITON_MODEL=unknown): still guarded, the
    # race still reported (severity from the CUDA record), and verbosity=1 says once why
    "unknown_version_said": dict(script="hammer.py", args=[], options="mode=detect:verbosity=1", expect="race",
                                 kernel="hammer_kernel", min_runs=1, models=("unknown",),
                                 stderr_has="an unknown version; it is guarded and serialized as usual"),
    # seeds/001: Autotuner.run replaced by a wrapper that takes a threading.Lock: the program
    # serializes the tuner itself, so no race report; verbosity=1 says once that it does
    "user_lock": dict(script="user_lock.py", args=[], options="mode=detect:verbosity=1", expect="no_race",
                      rc=0, kernel="user_lock_kernel", min_runs=1,
                      stderr_has="user_lock.py:39), and the wrapper serializes its callers"),
    # ... under serialize too: passes, nothing prevented (the program's lock did it)
    "user_lock_serialize": dict(script="user_lock.py", args=[], options="mode=serialize:verbosity=1",
                                expect="no_race", rc=0, kernel="user_lock_kernel", min_runs=1),
    # ... a wrapper without the lock serializes nothing: the race is reported
    "user_wrapper_unlocked": dict(script="user_lock.py", args=["--no-lock"], options="mode=detect",
                                  expect="race", kernel="user_lock_kernel", min_runs=1),
    # the thread inside 60 frames deep in the program, ~60 in import machinery: the report
    # stays short (folded) and names both call sites and the tuner frame
    "deep_stack": dict(script="deep_stack.py", args=[], options="mode=detect", expect="race",
                       kernel="deep_kernel", min_runs=1, check="deep_stack"),
    # stress=1 makes the unchoreographed seeds/004 race show in every run; which
    # of the race reports it is depends on where the scheduler put the threads
    "stress_seeds004": dict(script="stress_seeds004.py", args=[], options="mode=detect:stress=1",
                            expect="race_kind", kernel="stress_kernel", min_runs=10),
    # sequential tuning, then concurrent cached calls: nothing to report, even under stress
    "race_free": dict(script="race_free.py", args=[], options="mode=detect:stress=1", expect="clean",
                      kernel=None, min_runs=3),
    # another thread launches on the benchmark's device: interference report
    "interference_same": dict(script="interference.py", args=["--same-device"], options="mode=detect",
                              expect="interference", kernel="tuned_kernel", min_runs=1),
    # ... suppressed by an interference: line: nothing written, nothing said
    "interference_suppressed": dict(script="interference.py", args=["--same-device"],
                                    options="mode=detect:suppressions=supp.txt",
                                    files={"supp.txt": "interference:tuned_kernel\n"}, expect="clean",
                                    kernel=None, min_runs=1),
    # ... on another device: nothing
    "interference_split": dict(script="interference.py", args=["--other-device"], options="mode=detect",
                               expect="clean", kernel=None, min_runs=1),
    # threads on two devices share one tuner: the race report names both devices
    "two_devices": dict(script="two_devices.py", args=[], options="mode=detect", expect="race",
                        kernel="two_device_kernel", min_runs=1, check="two_devices"),
    # ... the entering thread made no CUDA call yet: its device at entry is named
    "two_devices_no_launch": dict(script="two_devices.py", args=["--no-launch"], options="mode=detect",
                                  expect="race", kernel="two_device_kernel", min_runs=1,
                                  check="two_devices_no_launch"),
    # a suppressed race is neither reported nor linked to the exception it causes
    "hammer_suppressed": dict(script="hammer.py", args=[], options="mode=detect:suppressions=supp.txt",
                              files={"supp.txt": "race:^hammer_kernel$   # the README's form\n"},
                              expect="no_race", kernel="hammer_kernel", min_runs=1),
    # ... but 'fast' parks after its run() returned (a subclass doing more work): its
    # self.nargs = None came before the tuner's entry, nothing is lost, no race
    "fast_path_first_after_clear": dict(script="fast_path_first.py", args=["--after-clear"], options="mode=detect",
                                        expect="no_race", rc=0, kernel="fast_first_kernel", min_runs=1,
                                        nogil=NOGIL_ENTRY),
    # the fast-path call is inside first; its return clears self.nargs under the
    # tuning thread: a high race seen at exit, and the TypeError linked to it
    "fast_path_first_exit": dict(script="fast_path_first.py", args=[], options="mode=detect",
                                 expect="race_at_exit", kernel="fast_first_kernel", min_runs=1,
                                 check="race_at_exit", nogil=NOGIL_ENTRY),
    # ... the tuner is inside first, held in its key, the fast-path call enters, then
    # returns while the tuner benchmarks: the later call's W2 under the earlier one
    "fast_path_first_tuner_first": dict(script="fast_path_first.py", args=["--tuner-first"], options="mode=detect",
                                        expect="race_at_exit", kernel="fast_first_kernel", min_runs=1,
                                        check="race_at_exit", nogil=NOGIL_ENTRY),
    # ... and the report lock is busy when the fast-path call returns: the tuner raises and
    # leaves while that call waits for it; its TypeError is linked all the same
    "cleared_while_reporting": dict(script="cleared_while_reporting.py", args=["--expect-linked"],
                                    options="mode=detect", expect="race_at_exit", kernel="cleared_kernel",
                                    min_runs=3, models=("3.6", "main"), check="cleared_while_reporting",
                                    nogil=NOGIL_ENTRY),
    # ... the fast-path call's whole call runs while the tuner is held in its key: the
    # tuner begins tuning with self.nargs already None, nobody else inside
    "fast_path_first_whole_call": dict(script="fast_path_first.py", args=["--whole-call"], options="mode=detect",
                                       expect="race_at_tuning", kernel="fast_first_kernel", min_runs=1,
                                       check="race_at_tuning", nogil=NOGIL_ENTRY),
    # a call pruned to one config is inside when a tuner enters: on 3.4-3.7 it benchmarked that
    # config (it synchronized), on main (#10413) it did not but its session entered prune_configs
    # (a marked tuning method): a race at the entry; on 'unknown' (nothing marked) only its
    # return (self.nargs = None under the benchmarking tuner) shows the race
    "pruned_single_seen": dict(script="pruned_single.py", args=[], options="mode=detect", expect="race_any",
                               kernel="pruned_single_kernel", min_runs=1, check="pruned_single"),
}


def first_race(jsonl_path):
    if not os.path.exists(jsonl_path):
        return None, f"no {os.path.basename(jsonl_path)}"
    with open(jsonl_path) as f:
        races = [r for r in map(json.loads, f) if r.get("kind") == "race"]
    return (races[0], None) if races else (None, "no race record in the JSON Lines report")


def check_both_stacks(jsonl_path):
    """The first race record shows both threads' Python stacks: each non-empty,
    each with a frame of the scenario's own code (tests/repro/scenarios).  None
    when it holds, else why not."""
    r, why = first_race(jsonl_path)
    if why:
        return why
    for who in ("entering", "inside"):
        frames = (r.get(who) or {}).get("python") or []
        if not any(os.path.dirname(os.path.abspath(f.get("file") or "")) == SCENARIO_DIR for f in frames):
            return (f"the {who} thread's Python stack has no frame of the scenario "
                    f"({len(frames)} frames{', unreadable' if (r.get(who) or {}).get('python_unreadable') else ''})")
    return None


def check_inside_blocked_on_0(r):
    i = r["inside"].get("cuda")
    if not i or i.get("device") != 0 or i.get("kind") != "sync" or not i.get("inside") \
            or not str(i.get("fn", "")).startswith("cuCtxSynchronize"):
        return f"thread inside is not shown blocked in cuCtxSynchronize on device 0: {i}"
    return None


def check_two_devices_no_launch(jsonl_path):
    """As check_two_devices, but the entering thread made no CUDA call: no
    cuda record, its device at entry (1) instead."""
    r, why = first_race(jsonl_path)
    if why:
        return why
    e = r["entering"]
    if e.get("cuda") is not None or e.get("device_at_entry") != 1:
        return f"entering thread: want no CUDA call and device_at_entry 1, got {e.get('cuda')}, {e.get('device_at_entry')}"
    return check_inside_blocked_on_0(r)


def check_two_devices(jsonl_path):
    """The race in the JSON Lines report: the entering thread last launched
    on device 1 (a stream and a kernel named), the thread inside was blocked
    in a synchronize on device 0.  Returns None when it holds, else why not."""
    if not os.path.exists(jsonl_path):
        return f"no {os.path.basename(jsonl_path)}"
    with open(jsonl_path) as f:
        races = [r for r in map(json.loads, f) if r.get("kind") == "race"]
    if not races:
        return "no race record in the JSON Lines report"
    r = races[0]
    e, i = r["entering"].get("cuda"), r["inside"].get("cuda")
    if not e or e.get("device") != 1 or e.get("kind") != "launch" or not e.get("stream") or not e.get("kernel"):
        return f"entering thread's CUDA call is not a named launch on device 1: {e}"
    if not i or i.get("device") != 0 or i.get("kind") != "sync" or not i.get("inside") \
            or not str(i.get("fn", "")).startswith("cuCtxSynchronize"):
        return f"thread inside is not shown blocked in cuCtxSynchronize on device 0: {i}"
    if r.get("severity") != "high":
        return f"severity {r.get('severity')!r}, want 'high' (the thread inside was benchmarking)"
    return None


def check_race_at_exit(jsonl_path):
    """The race was seen when thread 'fast' returned: high, seen_at "exit",
    entering = 'tuner' (blocked in its benchmark synchronize), inside =
    'fast'; and tuner's TypeError is linked to it by an exception record."""
    r, why = first_race(jsonl_path)
    if why:
        return why
    if r.get("seen_at") != "exit" or r.get("severity") != "high":
        return f"race seen_at {r.get('seen_at')!r}, severity {r.get('severity')!r}; want 'exit', 'high'"
    if r["entering"].get("name") != "tuner" or r["inside"].get("name") != "fast":
        return f"entering {r['entering'].get('name')!r}, inside {r['inside'].get('name')!r}; want 'tuner', 'fast'"
    c = r["entering"].get("cuda") or {}
    if c.get("kind") != "sync" or not c.get("inside"):
        return f"entering thread not shown inside its benchmark synchronize: {c}"
    return type_error_linked(jsonl_path, r)


def check_cleared_while_reporting(jsonl_path):
    """cleared_while_reporting.py: the race seen when 'fast' returned (high,
    entering 'tuner', inside 'fast'), and tuner's TypeError linked to it: the
    exception record names fast's thread, and the race's seq, or none when the
    tuner took the report lock first (its record is written before the race's)."""
    with open(jsonl_path) as f:
        recs = [json.loads(x) for x in f]
    races = [r for r in recs if r.get("kind") == "race" and r.get("seen_at") == "exit"]
    if len(races) != 1:
        return f"{len(races)} races seen at exit, want 1"
    r = races[0]
    if r.get("severity") != "high" or r["entering"].get("name") != "tuner" or r["inside"].get("name") != "fast":
        return (f"race at exit {r.get('severity')!r}, entering {r['entering'].get('name')!r}, inside "
                f"{r['inside'].get('name')!r}; want 'high', 'tuner', 'fast'")
    exc = [x for x in recs if x.get("kind") == "exception"]
    if len(exc) != 1 or exc[0]["exception"].get("type") != "TypeError" or exc[0]["entering"].get("name") != "tuner":
        return f"want one TypeError exception record of thread 'tuner', got {exc}"
    x = exc[0]
    if x["inside"].get("tid") != r["inside"]["tid"] or x.get("race_seq") not in (r["seq"], None) or \
            (x.get("race_seq") is None and x["seq"] > r["seq"]):
        return f"tuner's exception is not linked to race #{r['seq']}: {x}"
    return None


def type_error_linked(jsonl_path, r):
    """None when the first exception record is a TypeError linked to race r."""
    with open(jsonl_path) as f:
        exc = [x for x in map(json.loads, f) if x.get("kind") == "exception"]
    if not exc or exc[0].get("race_seq") != r["seq"] or exc[0]["exception"].get("type") != "TypeError":
        return f"no TypeError exception record linked to race #{r['seq']}: {exc}"
    return None


def check_race_at_tuning(jsonl_path):
    """The race was seen when thread 'tuner' began tuning with its arguments
    cleared by the fast-path call that had come and gone: high, seen_at
    "tuning", entering = 'tuner', no inside thread; and tuner's TypeError
    linked to it."""
    r, why = first_race(jsonl_path)
    if why:
        return why
    if r.get("seen_at") != "tuning" or r.get("severity") != "high":
        return f"race seen_at {r.get('seen_at')!r}, severity {r.get('severity')!r}; want 'tuning', 'high'"
    if r["entering"].get("name") != "tuner" or r.get("inside") is not None:
        return f"entering {r['entering'].get('name')!r}, inside {r.get('inside')!r}; want 'tuner', null"
    return type_error_linked(jsonl_path, r)


def check_race_without_gil(jsonl_path):
    """Without the GIL: the overlap of 'tuner' and 'fast' is reported at the
    second one's entry, high, "gil": "off"; every TypeError of 'tuner' is
    linked to it."""
    with open(jsonl_path) as f:
        recs = [json.loads(x) for x in f]
    pair = {"tuner", "fast"}
    races = [r for r in recs if r.get("kind") == "race"
             and {r["entering"].get("name"), (r.get("inside") or {}).get("name")} == pair]
    if len(races) != 1:
        return f"{len(races)} races between 'tuner' and 'fast', want 1"
    r = races[0]
    if (r.get("seen_at"), r.get("severity"), r.get("gil")) != ("entry", "high", "off"):
        return (f"race seen_at {r.get('seen_at')!r}, severity {r.get('severity')!r}, gil {r.get('gil')!r}; "
                "want 'entry', 'high', 'off'")
    bad = [x for x in recs if x.get("kind") == "exception" and x["entering"].get("name") == "tuner"
           and (x["exception"].get("type") != "TypeError" or x.get("race_seq") != r["seq"])]
    return f"tuner's exception not linked to race #{r['seq']}: {bad}" if bad else None


def check_pruned_single(jsonl_path, triton_model):
    """The race between 'tuner' (entering) and 'single' (inside), high, seen at
    the tuner's entry: on 3.4-3.7 'single' benchmarked its one config, on main
    (the single-config shortcut) it entered prune_configs in its session (the
    marked tuning methods); on 'unknown' (no method tunerguard knows) only at
    single's exit.  tuner's TypeError linked to it."""
    r, why = first_race(jsonl_path)
    if why:
        return why
    want = "exit" if triton_model == "unknown" else "entry"
    if r.get("seen_at") != want or r.get("severity") != "high":
        return (f"race seen_at {r.get('seen_at')!r}, severity {r.get('severity')!r}; want {want!r}, 'high' "
                f"for Triton {triton_model}")
    if r["entering"].get("name") != "tuner" or r["inside"].get("name") != "single":
        return f"entering {r['entering'].get('name')!r}, inside {r['inside'].get('name')!r}; want 'tuner', 'single'"
    with open(jsonl_path) as f:
        exc = [x for x in map(json.loads, f) if x.get("kind") == "exception"]
    if not exc or exc[0].get("race_seq") != r["seq"] or exc[0]["exception"].get("type") != "TypeError":
        return f"no TypeError exception record linked to race #{r['seq']}: {exc}"
    return None


def check_deep_stack(jsonl_path):
    """The race report of deep_stack.py (the thread inside 60 frames deep in
    the program and ~60 in import machinery): from WARNING to SUMMARY at most
    60 lines; it names the entering thread's call site, and for the thread
    inside both Autotuner.run and its own call site in the program.  Returns
    None when it holds, else why not."""
    text = open(jsonl_path[:-len(".jsonl")] + ".txt", errors="replace").read()
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith("WARNING: tunerguard: thread entered"))
        end = next(i for i in range(start, len(lines)) if lines[i].startswith("SUMMARY: tunerguard:"))
    except StopIteration:
        return "no race report from WARNING to SUMMARY"
    block = lines[start:end + 1]
    src = open(os.path.join(SCENARIO_DIR, "deep_stack.py")).read().splitlines()
    vic, ent = ("deep_stack.py:%d" % (1 + next(i for i, ln in enumerate(src) if "# the " + w in ln))
                for w in ("victim's call site", "entering thread's call site"))
    inside = next((i for i, ln in enumerate(block) if ln.startswith("  Previous call, still inside")), None)
    if len(block) > 60:
        return f"the race report is {len(block)} lines from WARNING to SUMMARY (at most 60)"
    if inside is None:
        return "no block of the thread inside"
    short = "\n".join(block[:6])
    if ent not in short or vic not in short:
        return f"the summary lacks a call site ({ent}, {vic}): {short}"
    if ent not in block[-1]:
        return f"the SUMMARY line does not name {ent}: {block[-1]}"
    rest = "\n".join(block[inside:])
    if not re.search(r"#\d+ Autotuner\.run  ", rest) and not re.search(r"#\d+ run  \S+autotuner\.py", rest):
        return "the thread inside's stack lacks its Autotuner.run frame"
    if vic not in rest:
        return f"the thread inside's stack lacks its call site {vic}"
    return None


CHECKS = {"deep_stack": check_deep_stack, "two_devices": check_two_devices, "two_devices_no_launch": check_two_devices_no_launch,
          "race_at_exit": check_race_at_exit, "race_at_tuning": check_race_at_tuning,
          "pruned_single": check_pruned_single, "cleared_while_reporting": check_cleared_while_reporting,
          "race_without_gil": check_race_without_gil}
# checks whose verdict depends on the Triton version modelled
CHECKS_BY_MODEL = {"pruned_single"}
EXIT_PREVENTED_PROBE = 9  # serialize cells run with exitcode=9: it must not fire
MODES = ("none", "detect", "serialize", "control")
DEFAULT_MODES = ("none", "detect", "serialize")
EXPECTED = {
    "none": "fails",
    "detect": "reported",
    "serialize": "passes",
    "control": "passes",
}
EXIT_PASS, EXIT_RACE, EXIT_HARNESS = 0, 1, 2
TMPDIR_NAME = ".tmp"  # the child's TMPDIR, in its directory
SKIP = 77


def child_env(args, mode, log_prefix):
    env = dict(os.environ)
    env["TMPDIR"] = private_tmpdir(os.path.dirname(log_prefix))
    for k in ("LD_PRELOAD", "TUNERGUARD_OPTIONS"):
        env.pop(k, None)
    ld = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = args.fakecuda + (":" + ld if ld else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if args.triton_release:
        env.pop("TG_TRITON_MODEL", None)
        env["TG_TRITON_RELEASE"] = "1"
    else:
        env.pop("TG_TRITON_RELEASE", None)
        env["TG_TRITON_MODEL"] = args.triton_model  # the one --triton-model (or its default) named
    if mode in ("detect", "serialize"):
        env["LD_PRELOAD"] = args.lib
        env["TUNERGUARD_OPTIONS"] = f"mode={mode}:log_path={log_prefix}"
        if mode == "serialize":
            # A race the wait prevented is reported as prevented and leaves the
            # exit status alone: a program serialize made correct exits 0.
            env["TUNERGUARD_OPTIONS"] += f":exitcode={EXIT_PREVENTED_PROBE}"
    return args.regime.apply(env)


def last_repro_line(stderr, stdout, scenario):
    tag = f"repro {scenario}:"
    for text in (stderr, stdout):
        lines = [ln for ln in text.splitlines() if ln.startswith(tag)]
        if lines:
            return lines[-1][len(tag):].strip()
    tail = (stderr.strip().splitlines() or stdout.strip().splitlines() or [""])[-1]
    return tail[:200]


def private_tmpdir(tmp):
    """The child's TMPDIR: a hidden folder in its directory (the report listings skip it)."""
    path = os.path.join(tmp, TMPDIR_NAME)
    os.makedirs(path, exist_ok=True)
    return path


def left_behind(tmp):
    """What the child left in its TMPDIR, sorted."""
    path = os.path.join(tmp, TMPDIR_NAME)
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def finish(args, rec, ok, outcome, tmp, out, err):
    """Record the outcome; keep the child's directory (with its output) when asked, else remove it.
    A child that ended on its own and left something in its TMPDIR fails."""
    left = left_behind(tmp) if rec.get("rc") is not None else []
    if left:
        ok, outcome = False, f"{outcome}; but it left {left} in its TMPDIR"
    rec["ok"] = ok
    rec["outcome"] = outcome
    if args.keep or (not ok and args.keep_failed):
        rec["dir"] = tmp
        with open(os.path.join(tmp, "stdout.txt"), "w") as f:
            f.write(out)
        with open(os.path.join(tmp, "stderr.txt"), "w") as f:
            f.write(err)
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def run_one(args, scenario, mode):
    tmp = tempfile.mkdtemp(prefix=f"repro-{scenario}-{mode}-")
    log_prefix = os.path.join(tmp, "tg")
    cmd = [args.python, os.path.join(SCENARIO_DIR, scenario + ".py")]
    if mode == "control":
        cmd.append("--control-lock")
    if mode == "serialize":
        cmd.append("--expect-serialized")
    if args.verbose:
        cmd.append("--verbose")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=tmp, env=child_env(args, mode, log_prefix), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=args.timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = None
    elapsed = time.monotonic() - t0

    rec = {"scenario": scenario, "mode": mode, "rc": rc, "seconds": round(elapsed, 3),
           "expected": EXPECTED[mode], "pid": proc.pid}
    reason = last_repro_line(err, out, scenario)
    report_path = f"{log_prefix}.{proc.pid}.txt"
    report = None
    if os.path.exists(report_path):
        with open(report_path, errors="replace") as f:
            report = f.read()
    rec["report_files"] = sorted(os.path.basename(p) for p in glob.glob(os.path.join(tmp, "*")))
    rec["tunerguard_stderr"] = [ln for ln in err.splitlines() if "tunerguard" in ln and not ln.startswith("repro ")]

    if rc is None:
        outcome, ok = f"timeout after {args.timeout:.0f} s", False
    elif rc < 0:
        outcome, ok = f"killed by signal {-rc}", False
    elif rc == EXIT_HARNESS:
        outcome, ok = f"harness error: {reason}", False
    elif mode == "none":
        ok = rc == EXIT_RACE and SCENARIOS[scenario][1] in reason
        outcome = f"fails: {reason}" if ok else f"exit {rc}, not the expected failure: {reason}"
    elif mode in ("serialize", "control"):
        linked = "raised in a call that raced" in err
        ok = rc == EXIT_PASS and not linked
        outcome = ("passes" if ok else
                   f"exit {rc} (exitcode={EXIT_PREVENTED_PROBE} fired: a prevented race counted)"
                   if rc == EXIT_PREVENTED_PROBE else
                   f"an exception linked to a race the wait prevented: {reason}" if linked else f"exit {rc}: {reason}")
    else:  # detect
        kernel = SCENARIOS[scenario][0]
        if report is None:
            ok = False
            outcome = f"no report {os.path.basename(report_path)} (dir has {rec['report_files']}); exit {rc}: {reason}"
        elif "WARNING: tunerguard" not in report:
            ok, outcome = False, f"report lacks 'WARNING: tunerguard' (exit {rc})"
        elif f"SUMMARY: tunerguard: tuner race on '{kernel}'" not in report:
            # a race, not only another kind (an interference report names the kernel too)
            ok, outcome = False, f"no race report on kernel {kernel!r} (exit {rc})"
        elif rc not in (EXIT_PASS, EXIT_RACE):
            ok, outcome = False, f"report written but exit {rc}: {reason}"
        else:
            ok = True
            outcome = f"reported ({'program then passed' if rc == 0 else 'program still failed: ' + reason})"
            why = check_both_stacks(f"{log_prefix}.{proc.pid}.jsonl") if args.both_stacks else None
            if why:
                ok, outcome = False, f"reported, but {why}"
    finish(args, rec, ok, outcome, tmp, out, err)
    if not ok and args.verbose:
        sys.stderr.write(f"--- {scenario}/{mode} rc={rc}\n{err}\n")
    return rec


def extra_spec(args, scenario):
    """EXTRA[scenario] for the regime the children run in (its `nogil` part)."""
    spec = dict(EXTRA[scenario])
    nogil = spec.pop("nogil", None)
    if nogil and args.gil_regime == "nogil":
        spec.update(nogil)
    return spec


def run_extra(args, scenario):
    spec = extra_spec(args, scenario)
    tmp = tempfile.mkdtemp(prefix=f"repro-{scenario}-")
    log_prefix = os.path.join(tmp, "tg")
    env = child_env(args, "detect", log_prefix)
    env["TUNERGUARD_OPTIONS"] = f"{spec['options']}:log_path={log_prefix}"
    for name, text in spec.get("files", {}).items():
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    cmd = [args.python, os.path.join(SCENARIO_DIR, spec["script"])] + spec["args"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=args.timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = None
    rec = {"scenario": scenario, "mode": "extra", "options": spec["options"], "rc": rc,
           "seconds": round(time.monotonic() - t0, 3), "expected": spec["expect"], "pid": proc.pid}
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(tmp, "*"))
                   if os.path.basename(p) not in spec.get("files", {}))
    rec["report_files"] = files
    report_path = f"{log_prefix}.{proc.pid}.txt"
    report = open(report_path, errors="replace").read() if os.path.exists(report_path) else None
    reason = last_repro_line(err, out, spec["script"][:-3])
    if rc is None:
        ok, outcome = False, f"timeout after {args.timeout:.0f} s"
    elif rc < 0 or rc == EXIT_HARNESS:
        ok, outcome = False, f"exit {rc}: {reason}"
    elif spec["expect"] == "no_race":
        kinds = []
        jp = f"{log_prefix}.{proc.pid}.jsonl"
        if os.path.exists(jp):
            with open(jp) as f:
                kinds = [json.loads(x).get("kind") for x in f]
        bad = [k for k in kinds if k in ("race", "exception")]
        ok = rc == spec.get("rc", EXIT_RACE) and not bad and "tuner race" not in (report or "") \
            and "exception in a tuner" not in (report or "")
        outcome = (f"exit {rc} as without tunerguard, no race reported (kinds {kinds})" if ok else
                   f"exit {rc}, reported {bad or 'in text'}: {reason}")
        if ok and spec.get("stderr_has") and spec["stderr_has"] not in err:
            ok, outcome = False, f"no race reported, but stderr lacks {spec['stderr_has']!r}"
    elif spec["expect"] == "clean":
        said = [ln for ln in err.splitlines() if ln.startswith("tunerguard:")]
        ok = rc == EXIT_PASS and not files and not said  # nothing reported: no file, no line
        outcome = "clean" if ok else f"exit {rc}, files {files}, said {said}: {reason}"
    else:
        what = {"race": "thread entered a tuner another thread is inside", "interference": "tuning under load",
                "race_at_exit": "a call left a tuner while another thread was benchmarking in it",
                "race_at_tuning": "another call cleared a tuner call's arguments before it began tuning"}
        what["race_any"] = what["race"] + "' or '" + what["race_at_exit"]  # the check says which one
        what["race_kind"] = what["race_any"] + "' or '" + what["race_at_tuning"]
        wants = {"race_any": ["race", "race_at_exit"],
                 "race_kind": ["race", "race_at_exit", "race_at_tuning"]}.get(spec["expect"], [spec["expect"]])
        ok = report is not None and spec["kernel"] in report and \
            any("WARNING: tunerguard: " + what[w] in report for w in wants)
        outcome = (f"{spec['expect']} reported (exit {rc})" if ok else
                   f"no '{what[spec['expect']]}' report naming {spec['kernel']!r}; files {files}; exit {rc}: {reason}")
        if ok and spec["expect"] == "interference" and not re.search(
                r"^tunerguard: .*\b1 benchmark timed under load; reports in ", err, re.M):
            ok, outcome = False, "interference reported, but no exit summary line says so"
        said = err.count(spec.get("stderr_has") or "\0")
        if ok and spec.get("stderr_has") and said != 1:
            ok, outcome = False, f"{spec['expect']} reported, but stderr says {spec['stderr_has']!r} {said} times"
        if ok and spec.get("check"):
            jp = f"{log_prefix}.{proc.pid}.jsonl"
            why = (CHECKS[spec["check"]](jp, args.triton_model) if spec["check"] in CHECKS_BY_MODEL else
                   CHECKS[spec["check"]](jp))
            if why:
                ok, outcome = False, f"{spec['expect']} reported, but {why}"
    finish(args, rec, ok, outcome, tmp, out, err)
    return rec


def check_release(python, version):
    """None when `python` imports triton `version` (and not the model), else why not."""
    probe = "import triton, sys; sys.stdout.write(triton.__version__ + ' ' + triton.__file__)"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONPATH", "TG_TRITON_MODEL")}
    proc = subprocess.run([python, "-c", probe], cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        return f"{python} cannot import triton: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
    got, path = proc.stdout.split(" ", 1)
    if got != version or os.path.join("tests", "repro", "model") in path:
        return f"{python} imports triton {got} from {path}, not the release {version}"
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", help="path of libtunerguard.so (needed for detect and serialize)")
    p.add_argument("--fakecuda", required=True, help="directory holding the stand-in libcuda.so.1")
    p.add_argument("--python", default=sys.executable, help="interpreter for the children (default: this one)")
    p.add_argument("--scenario", action="append", choices=sorted(SCENARIOS) + sorted(EXTRA),
                   help="repeatable; default all")
    p.add_argument("--all-matrix", action="store_true",
                   help="every scenario of the none/detect/serialize matrix, besides those --scenario names")
    p.add_argument("--skip-scenario", action="append", default=[], choices=sorted(SCENARIOS) + sorted(EXTRA),
                   help="repeatable; leave this one out of the default (all) or of --scenario's list")
    p.add_argument("--mode", action="append", choices=MODES,
                   help=f"repeatable; default {', '.join(DEFAULT_MODES)}")
    p.add_argument("--triton-model", default=os.environ.get("TG_TRITON_MODEL") or "3.6", choices=TRITON_MODELS,
                   help="the Triton version the model's Autotuner follows (default: $TG_TRITON_MODEL, else 3.6)")
    p.add_argument("--triton-release", metavar="X.Y.Z",
                   help="run against the Triton release installed for --python (it must import as X.Y.Z)")
    p.add_argument("--runs", type=int, default=1, help="runs of each scenario x mode (default 1)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per child (default 120)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    p.add_argument("--skip-if-missing", action="store_true",
                   help=f"exit {SKIP} (skip) when --python does not exist")
    p.add_argument("--keep-failed", action="store_true", help="keep the temp dir (stdout, stderr, reports) of failures")
    p.add_argument("--keep", action="store_true", help="keep every temp dir")
    p.add_argument("--verbose", action="store_true", help="children print their choreography; failures dump stderr")
    p.add_argument("--both-stacks", action="store_true",
                   help="detect: the race record must show both threads' Python stacks, each with a frame of the scenario")
    add_regime_argument(p)
    args = p.parse_args()
    if args.triton_model not in TRITON_MODELS:  # the default, from the environment, is not checked by argparse
        p.error(f"TG_TRITON_MODEL={args.triton_model!r} is not one of {', '.join(TRITON_MODELS)}")

    if not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)) and not shutil.which(args.python):
        if args.skip_if_missing:
            print(f"SKIP: Triton {args.triton_release}: no venv {args.python} (tools/triton_releases.sh make)"
                  if args.triton_release else f"SKIP: interpreter {args.python} not installed")
            return SKIP
        p.error(f"interpreter {args.python} not found")
    args.regime = Regime(args.gil_regime)
    why = args.regime.check_interpreter(args.python)
    if why:
        print(f"FAIL: {why}")
        return 1
    if args.triton_release:
        why = check_release(args.python, args.triton_release)
        if why:
            print(f"FAIL: {why}")
            return 1
        args.triton_model = "release-" + args.triton_release  # for the checks: a release, not a model
    default = list(SCENARIOS) + [sc for sc in EXTRA if args.triton_model in EXTRA[sc].get("models", TRITON_MODELS)
                                 or (args.triton_release and "models" not in EXTRA[sc])]
    if args.triton_release and not args.scenario:
        # the other tuners' scenarios run on their own terms (the model's Triton, fla-core's wheel)
        default = [sc for sc in default if sc not in OTHER_TUNERS]
        print(f"not run against a Triton release: {', '.join(OTHER_TUNERS)} (name one with --scenario"
              " to run it anyway)", file=sys.stderr)
    chosen = (list(SCENARIOS) if args.all_matrix else []) + (args.scenario or ([] if args.all_matrix else default))
    scenarios = [sc for sc in chosen if sc not in args.skip_scenario]
    modes = args.mode or list(DEFAULT_MODES)
    if any(m in ("detect", "serialize") for m in modes) or any(sc in EXTRA for sc in scenarios):
        if not args.lib or not os.path.isfile(args.lib):
            p.error(f"--lib {args.lib!r} is not a file (needed for detect/serialize)")
        args.lib = os.path.abspath(args.lib)
    if not os.path.isfile(os.path.join(args.fakecuda, "libcuda.so.1")):
        p.error(f"--fakecuda {args.fakecuda!r} has no libcuda.so.1")
    args.fakecuda = os.path.abspath(args.fakecuda)

    records = []
    for scenario in scenarios:
        if scenario in EXTRA:
            for _ in range(max(args.runs, EXTRA[scenario]["min_runs"])):
                records.append(run_extra(args, scenario))
            continue
        for mode in modes:
            for _ in range(args.runs):
                records.append(run_one(args, scenario, mode))

    held, said = args.regime.verify()
    all_ok = all(r["ok"] for r in records) and held
    if args.json:
        json.dump({"python": args.python, "lib": args.lib, "triton_model": args.triton_model,
                   "triton_release": args.triton_release, "runs": args.runs, "gil_regime": args.gil_regime,
                   "ok": all_ok, "results": records},
                  sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        triton = f"triton release: {args.triton_release}" if args.triton_release else f"triton model: {args.triton_model}"
        print(f"python: {args.python}   {triton}   runs per cell: {args.runs}")
        width = max(len(s) for s in scenarios)
        for scenario in scenarios:
            for mode in (["extra"] if scenario in EXTRA else modes):
                cell = [r for r in records if r["scenario"] == scenario and r["mode"] == mode]
                n_ok = sum(r["ok"] for r in cell)
                first_bad = next((r for r in cell if not r["ok"]), None)
                shown = first_bad or cell[0]
                verdict = "ok " if first_bad is None else "BAD"
                expected = extra_spec(args, scenario)["expect"] if scenario in EXTRA else EXPECTED[mode]
                print(f"{verdict} {scenario:<{width}}  {mode:<9}  expected {expected:<8}  "
                      f"{n_ok}/{len(cell)} as expected  | {shown['outcome']}")
        if said:
            print(f"{'ok ' if held else 'BAD'} {said}")
        print("all outcomes as expected" if all_ok else "SOME OUTCOMES DIFFER FROM THE EXPECTED")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
