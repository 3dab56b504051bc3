"""Integration checks, group race: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import json
import os
import re

from harness import expect, jsonl_lines, no_files, only_report, opts, race_prog, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


def check_race_detect(ctx):
    res = ctx.run_py(race_prog(False), options=opts())
    expect(res.rc == 0, "program status kept", res)
    expect("DONE" in res.out, "program completed", res)
    expect("ORDER victim:start,other:start,other:end,victim:end" in res.out, "the overlap was forced", res)
    pid = re.search(r"DONE pid (\d+)", res.out).group(1)
    path, text = only_report(res)
    expect(os.path.basename(path) == "tg.%s.txt" % pid, "report named <log_path>.<pid>.txt", res)
    expect(text.count("WARNING: tunerguard") == 1, "one report", res)
    expect("my_kernel" in text, "the report names the kernel", res)
    expect("Autotuner.run" in text, "the report names the method", res)
    objs = jsonl_lines(res)
    expect(len(objs) == 1, "one JSON line", res)
    o = objs[0]
    expect(str(o.get("pid")) == pid, "json pid", res)
    expect("my_kernel" in json.dumps(o), "json names the kernel", res)
    # The entering thread's native stack starts at the guard's caller:
    # tunerguard's own frames on top (the capture, the report, the guard)
    # are dropped by the one "is this address ours" test (tg_same_object).
    nat = o["entering"]["native"]
    own = [f["symbol"] for f in nat if (f.get("symbol") or "").startswith("tg_")]
    expect(nat and not own, "the entering thread's native stack has none of tunerguard's frames: %s" % own, res)
    expect(re.search(r"^tunerguard: 1 race reported", res.err, re.M), "at-exit summary line", res)
    expect(sum(1 for l in res.err.splitlines() if l.startswith("tunerguard:")) == 1,
           "one tunerguard line on stderr", res)


# Three threads in one marked tuner (a subclass of Triton's Autotuner,
# verbosity 0): A benchmarks (inside _bench) and waits there; B entered
# after it on a fast path (no _bench) and waits too; the main thread enters.
# Its overlap is with the benchmarking A: a race to report, whichever of A
# and B is found first.  A thread looks for its occupant slot from the one of
# its tid (tid % 8), so B is made to sit below A (start_in,
# tests/serialize/fixture/tgfix/slots.py), and the check asserts it did.
# Broken (the severity judged on the first occupant found), the second race
# is a silent low-severity overlap.
THIRD_ENTRANT_PROG = program('third_entrant')


def check_race_third_entrant(ctx):
    res = ctx.run_py(THIRD_ENTRANT_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    m = re.search(r"SLOTS (\d) (\d)", res.out)
    expect(m and int(m.group(2)) < int(m.group(1)), "B's slot below A's (found first)", res)
    objs = jsonl_lines(res)
    expect([o.get("severity") for o in objs] == ["high", "high"], "two high-severity races, B's and C's", res)
    expect(all(o["inside"]["name"] == "A" for o in objs), "each with A, the thread benchmarking", res)


# A thread nested in 17 tuners (one more than its record's held[] keeps),
# benchmarking in the innermost, while the main thread enters that one: a
# high-severity race.  Its slot there cannot be marked when its evidence
# appears, so the entry reads its record (TG_EV_UNTRACKED).
DEEP_PROG = program('deep')

def check_race_deep_nesting(ctx):
    res = ctx.run_py(DEEP_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    js = res.files("tg.*.jsonl")
    objs = jsonl_lines(res) if js else []
    expect([o.get("severity") for o in objs] == ["high"], "a high-severity race with A, benchmarking at depth 17", res)

# The report reads the stack of A, parked 31 frames deep in frames no one
# has read (3.11 makes their frame objects as they are read, each an
# allocation), while the collector runs at every other allocation and a
# cyclic garbage's finalizer in it lets A leave those frames, the GIL
# released until it has.  The walk must not let A run: the collector is held
# off during it, so the finalizer runs after the report has read A's frames,
# and the report shows them.  Broken (the collection inside the walk), 3.11
# reads the object of a frame A has popped: SIGSEGV in PyFrame_GetCode.
# Free-threaded with the GIL off, A's frames are read parked or at its entry
# (docs/free-threading.md): only that the program completed is checked.
GC_IN_WALK_DEPTH = 30
GC_IN_WALK_PROG = program('gc_in_walk', depth=GC_IN_WALK_DEPTH)


def check_race_gc_in_walk(ctx):
    res = ctx.run_py(GC_IN_WALK_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    m = re.search(r"^FIRED (\S*) GIL (\d)", res.out, re.M)
    expect(m and m.group(1) == "MainThread", "the finalizer ran once, in the main thread's collection", res)
    objs = jsonl_lines(res)
    expect(len(objs) == 1 and objs[0].get("kind") == "race", "one race", res)
    if m.group(2) == "1":
        funcs = [f["func"] for f in objs[0]["inside"]["python"]]
        expect(funcs.count("park_deep") == GC_IN_WALK_DEPTH + 1 and "moved_on" not in funcs,
               "A's frames as they were when the report began: %s" % funcs[:8], res)


# The thread inside is 400 frames deep in the program: the record keeps its
# innermost 192 frames and its outermost 64 (the thread's start), counting
# those between; the text folds the recursion.  It waits blocked in a CUDA
# call (the stand-in libcuda's gate), so its stack is read with the GIL off
# as with it (a thread running Python there would be shown where it entered).
VERY_DEEP_PROG = program('very_deep')

def check_race_very_deep_stack(ctx):
    res = ctx.run_py(VERY_DEEP_PROG, options=opts(), extra_env=ctx.fakecuda_env())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    objs = jsonl_lines(res)
    expect(len(objs) == 1 and objs[0].get("kind") == "race", "one race", res)
    inside = objs[0]["inside"]
    py, omitted = inside["python"], inside.get("python_omitted")
    expect(len(py) == 256 and inside["python_truncated"], "256 frames kept, truncated", res)
    expect(isinstance(omitted, int) and omitted > 100, "the frames left out are counted (%r)" % omitted, res)
    expect(py[191]["func"] == "descend" and py[192]["func"] == "descend", "the gap is inside the recursion", res)
    expect(py[-1]["func"].endswith("_bootstrap") and py[-2]["func"].endswith("_bootstrap_inner"),
           "the outermost frames are the thread's start", res)
    expect(any(f["func"].endswith("run") and "autotuner" in f["file"] for f in py[:10]), "the tuner frame kept", res)
    _, text = only_report(res)
    expect("[%d frames not captured]" % omitted in text, "the text says how many were not captured", res)
    expect("[previous line repeated" in text, "the text folds the recursion", res)
    expect(len(text.splitlines()) < 80, "the text report is short (%d lines)" % len(text.splitlines()), res)

# A (found first: slot 0) ran a warmup of another tuner inside its session,
# over by now, and waits on a fast path; B benchmarks; the main thread
# enters.  A's slot keeps the evidence bit of its warmup, but its record says
# it is not tuning now: the race is with B, high severity, naming B.
WARMUP_PROG = program('warmup')

def check_race_after_warmup(ctx):
    res = ctx.run_py(WARMUP_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    js = res.files("tg.*.jsonl")
    objs = jsonl_lines(res) if js else []
    c = [o for o in objs if o.get("entering",{}).get("name") == "MainThread"]
    expect(c and c[0]["severity"] == "high" and c[0]["inside"]["name"] == "B",
           "C's race with B (benchmarking) reported high, naming B", res)


# A guarded call made from a hot loop: specialized by the adaptive
# interpreter (3.11+) and, where the JIT is on (3.14 and 3.15 with PYTHON_JIT=1:
# the integration/race/*-debian-jit tests), run from a compiled trace.  The guard
# must stay in that path: the main thread's calls from the hot loop's trace
# overlap a victim parked inside and are reported.  Where the JIT is on, the
# program checks that the loop did get a trace (an executor on its code).
HOT_LOOP_PROG = program('hot_loop')


def check_race_hot_loop(ctx):
    res = ctx.run_py(HOT_LOOP_PROG, options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    expect("TRACED False" not in res.out, "the JIT is on but traced no loop", res)
    expect(os.environ.get("PYTHON_JIT") != "1" or "TRACED True" in res.out,
           "PYTHON_JIT=1 (integration/race/*-debian-jit) but the JIT is not on", res)
    expect(re.search(r"^tunerguard: 1 race reported \(3 seen\)", res.err, re.M),
           "each of the main thread's three calls seen (two of them from the trace, where there is one)", res)
    objs = jsonl_lines(res)
    expect(objs and objs[0].get("entering", {}).get("name") == "MainThread"
           and objs[0].get("inside", {}).get("name") == "victim",
           "the hot loop's call racing the victim is reported", res)


# Two calls on a tuned key of a model of Triton's Autotuner (run() writes
# self.nargs on every call, reads it for the launch, clears it as it
# returns): the victim parks inside its launch, the main thread calls the
# same key three times from one line.  With the GIL (any build, and 3.13t
# with PYTHON_GIL=1) that is a low-severity overlap: counted at verbosity 0,
# written at 1.  Without it the calls run at once and clear or replace each
# other's arguments: a high-severity race at either verbosity, written once
# and seen three times (the repeats take race_again.c's path), its text
# saying why and what helps, its record "gil": "off".
TUNED_KEY_OVERLAP_PROG = program('tuned_key_overlap')


def check_race_tuned_key_overlap(ctx):
    for verbosity in (0, 1):
        res = ctx.run_py(TUNED_KEY_OVERLAP_PROG, options=opts(verbosity=verbosity))
        expect(res.rc == 0 and "DONE" in res.out, "verbosity=%d: program completed" % verbosity, res)
        gil = re.search(r"^GIL (\d)", res.out, re.M).group(1) == "1"
        if gil and verbosity == 0:
            no_files(res, "with the GIL, verbosity 0: the low-severity overlap is counted only; no report")
            continue
        _, text = only_report(res)
        objs = [o for o in jsonl_lines(res) if o["kind"] != "repeats"]
        expect(len(objs) == 1 and text.count("WARNING: tunerguard: thread entered a tuner") == 1,
               "verbosity=%d: one report written (the repeats apart)" % verbosity, res)
        o = objs[0]
        expect(o["kind"] == "race" and o["seen_at"] == "entry" and o["inside"]["name"] == "victim"
               and o["entering"]["name"] == "MainThread", "verbosity=%d: the main thread's entry, the victim inside"
               % verbosity, res)
        if gil:
            expect(o["severity"] == "low" and "gil" not in o, "with the GIL: low severity, no \"gil\" field", res)
            expect("Severity: low: overlap on an already tuned key" in text and "GIL was off" not in text,
                   "with the GIL: the low-severity sentence", res)
            continue
        expect(o["severity"] == "high" and o.get("gil") == "off",
               "verbosity=%d, without the GIL: high severity, \"gil\": \"off\" (%s, %r)"
               % (verbosity, o["severity"], o.get("gil")), res)
        expect("Severity: high: the GIL was off, so the two calls ran at once; the tuner writes its call's"
               " arguments on itself on every call, tuned key or not" in text,
               "without the GIL: the severity sentence says why", res)
        expect("mode=serialize (without the GIL it holds the tuner's lock on every call)" in text
               and "does not help" in text and "once from one thread before starting" not in text,
               "without the GIL: what to do is serialize or a lock, not a first call made alone", res)
        expect(re.search(r"^tunerguard: 1 race reported \(3 seen\)", res.err, re.M),
               "verbosity=%d, without the GIL: one race written, three seen" % verbosity, res)


# Ctrl-C whose handler runs inside tunerguard's own Python code: the
# KeyboardInterrupt is the program's, so the guarded call raises it, and a
# call interrupted before it was made is not made (a wait for it is
# abandoned).  Each program below defines make_tuner(hook) and before_call(),
# then INTERRUPT_TAIL parks a victim thread inside the tuner and calls it
# from the main thread.  Broken, the main thread gets no KeyboardInterrupt,
# or gets it only after the safety timer let the victim go.
INTERRUPT_TAIL = program('interrupt_tail')

# A tuner whose kernel name (a property tunerguard reads for its reports)
# raises KeyboardInterrupt in the main thread when fire_now() says so, as
# Ctrl-C's handler raises it when it runs in there.
RAISING_NAME_TUNER = program('raising_name_tuner')

# detect: the race report at the call's entry reads the name.
INTERRUPT_IN_LOOKUP_PROG = program('interrupt_in_lookup') + RAISING_NAME_TUNER + INTERRUPT_TAIL

# serialize: the handler runs in the program's audit hook on
# tunerguard.serialize_wait, just before the main thread would block.
INTERRUPT_IN_WAIT_HOOK_PROG = program('interrupt_in_wait_hook') + INTERRUPT_TAIL

# serialize, wait_timeout=1: in the wait_timeout report, which reads the name
# once the wait is under way (armed after the reads before the wait).
INTERRUPT_IN_WAIT_REPORT_PROG = program('interrupt_in_wait_report') + RAISING_NAME_TUNER + INTERRUPT_TAIL


def check_interrupted(ctx, prog, **options):
    res = ctx.run_py(prog, options=opts(**options))
    out = res.out.splitlines()
    expect(res.rc == 0 and "DONE" in res.out, "the program ran", res)
    expect("INTERRUPTED victim still inside" in out, "KeyboardInterrupt from the call, the victim still inside", res)
    expect("RAN victim" in out, "the interrupted call was not made", res)
    return res


def check_race_interrupt_in_lookup(ctx):
    res = check_interrupted(ctx, INTERRUPT_IN_LOOKUP_PROG)
    path, text = only_report(res)
    expect("my_kernel" in text, "the race reported, the kernel named", res)


def check_race_interrupt_in_wait_hook(ctx):
    check_interrupted(ctx, INTERRUPT_IN_WAIT_HOOK_PROG, mode="serialize")


def check_race_interrupt_in_wait_report(ctx):
    check_interrupted(ctx, INTERRUPT_IN_WAIT_REPORT_PROG, mode="serialize", wait_timeout=1)


def check_race_serialize(ctx):
    res = ctx.run_py(race_prog(True), options=opts(mode="serialize"))
    expect(res.rc == 0, "no exception, status kept", res)
    expect("DONE" in res.out and "Traceback" not in res.err, "program completed", res)
    expect("WAIT_EVENTS 1" in res.out, "tunerguard.serialize_wait raised once", res)
    expect("ORDER victim:start,victim:end,other:start,other:end" in res.out,
           "the second call ran only after the first ended", res)
    expect(re.search(r"^tunerguard: .*serialized", res.err, re.M), "stderr mentions serialized", res)
    expect("my_kernel" in res.err, "the summary names the contended kernel", res)
    # the prevented race says so in its headline and SUMMARY line, not 100 lines later
    _, text = only_report(res)
    expect(re.search(r"^WARNING: tunerguard: race prevented \(serialize\): thread entered a tuner", text, re.M)
           and re.search(r"^SUMMARY: tunerguard: tuner race prevented \(serialize\) on 'my_kernel'", text, re.M)
           and "What it does: nothing: serialize mode made the second thread wait" in text,
           "the report's headline, SUMMARY and summary say the race was prevented", res)


# Two races on one tuner: the entering thread calls from one line both
# times, the thread inside from line A, then from line B (or A again, the
# control).  The report's de-duplication key holds both threads' call sites:
# another inside site is another race, written; the same two sites again
# are its repeat, counted.
TWO_INSIDE_SITES_PROG = program('two_inside_sites')


def check_two_inside_sites_two_reports(ctx):
    """Same entering call site, another inside call site: two reports."""
    for second, want_written in (("b", 2), ("a", 1)):
        res = ctx.run_py(TWO_INSIDE_SITES_PROG, options=opts(), extra_env={"SECOND": second})
        expect(res.rc == 0 and "DONE" in res.out, "ran", res)
        _, text = only_report(res)
        what = "inside sites A, B" if second == "b" else "inside site A twice (the control)"
        written = text.count("WARNING: tunerguard: thread entered a tuner another thread is inside")
        expect(written == want_written, "%s: %d race reports, %d written" % (what, want_written, written), res)
        expect(re.search(r"^tunerguard: %d races? reported \(2 seen\)" % want_written, res.err, re.M),
               "%s: the exit line says %d reported, 2 seen" % (what, want_written), res)


def check_race_off(ctx):
    prog = race_prog(False).replace("assert is_guarded(Autotuner)", "assert not is_guarded(Autotuner)")
    res = ctx.run_py(prog, options=opts(mode="off"))
    expect(res.rc == 0 and "DONE" in res.out, "program unaffected", res)
    expect("ORDER victim:start,other:start,other:end,victim:end" in res.out, "the overlap happened", res)
    expect(res.err == "", "nothing on stderr", res)
    no_files(res)


def check_race_log_stderr(ctx):
    res = ctx.run_py(race_prog(False), options="log_path=stderr")
    expect(res.rc == 0 and "DONE" in res.out, "program unaffected", res)
    expect(res.err.count("WARNING: tunerguard") == 1 and "my_kernel" in res.err, "report on stderr", res)
    no_files(res, "no report file (log_path=stderr)")


CHECKS = [
    check_race_detect,
    check_two_inside_sites_two_reports,
    check_race_third_entrant,
    check_race_deep_nesting,
    check_race_very_deep_stack,
    check_race_gc_in_walk,
    check_race_after_warmup,
    check_race_tuned_key_overlap,
    check_race_hot_loop,
    check_race_interrupt_in_lookup,
    check_race_interrupt_in_wait_hook,
    check_race_interrupt_in_wait_report,
    check_race_serialize,
    check_race_off,
    check_race_log_stderr,
]
