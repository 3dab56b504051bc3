"""Integration checks, group dedup: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import os
import re
import subprocess
import textwrap

from harness import expect, jsonl_lines, only_report, opts, prelude, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (h) repeats

def check_repeat_reported_once(ctx):
    res = ctx.run_py(program('repeat_reported_once'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 1, "the same race five times is reported once", res)
    objs = jsonl_lines(res)
    expect([o["kind"] for o in objs] == ["race", "repeats"], "the race, then at exit its repeats", res)
    expect(objs[1]["race_seq"] == objs[0]["seq"] and objs[1]["repeats"] == 4, "4 repeats of that race", res)
    expect(re.search(r"^  Report #%d of this process repeated 4 more times" % objs[0]["seq"], text, re.M)
           and "SUMMARY: tunerguard: seen again on 'my_kernel'" in text, "the text report says so", res)
    expect(re.search(r"^tunerguard: 1 race reported \(5 seen\)", res.err, re.M), "summary counts repeats", res)


def check_verbosity2_writes_every_occurrence(ctx):
    res = ctx.run_py(program('verbosity2_writes_every_occurrence'), options=opts(verbosity=2))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 5, "verbosity=2: all five written", res)
    expect("repeats" not in [o["kind"] for o in jsonl_lines(res)], "and no repeats record", res)


def check_distinct_races_reported(ctx):
    # counterpart of (h): two different tuners are two reports
    res = ctx.run_py(program('distinct_races_reported'), options=opts())
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 2 and "other_kernel" in text, "two reports", res)
    expect(re.search(r"^tunerguard: 2 races reported", res.err, re.M), "summary", res)


def check_new_tuner_every_call_is_one_bug(ctx):
    # A program that builds its tuner inside the function it calls: a new
    # Autotuner (all kept alive: thirty addresses) for one kernel, raced at
    # one pair of call sites, is one bug: one report, thirty seen.  Fails if
    # the dedupe key holds the instance.
    res = ctx.run_py(program('new_tuner_every_call_is_one_bug'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 1, "thirty tuner objects, one report", res)
    expect(re.search(r"^tunerguard: 1 race reported \(30 seen\)", res.err, re.M), "summary: 1 of 30 seen", res)


def check_report_cap(ctx):
    # report_cap=2: five kernels raced, two reports written, the exit line
    # counts the other three.
    res = ctx.run_py(program('report_cap'), options=opts(report_cap=2))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 2, "two reports written", res)
    expect(re.search(r"^tunerguard: 2 races reported \(5 seen\); 3 more reports not written \(report_cap=2\)",
                     res.err, re.M), "the exit line counts the rest", res)


def check_non_utf8_folder_escaped(ctx):
    # A program under a folder whose name is not UTF-8 (byte 0xff): its file
    # names read "run\\xff/prog.py" in the text report (the frames, the
    # summary, "What to do"), in the JSON Lines (valid JSON, the same four
    # characters) and in `tunerguard report`; never "?".
    tmp = ctx.tmpdir()
    folder = os.path.join(os.fsencode(tmp), b"run\xff")
    os.mkdir(folder)
    prog = os.path.join(folder, b"prog.py")
    with open(prog, "w") as f:
        f.write(prelude())
        f.write(textwrap.dedent(program("non_utf8_folder_escaped")))
    res = ctx.run_argv([ctx.python, prog], opts(), cwd=tmp)
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    shown = "run\\xff/prog.py:"
    # without the GIL a first call made alone does not help: a lock is named instead
    fix = ("  What to do: run with TUNERGUARD_OPTIONS=mode=serialize (without the GIL it holds the tuner's lock on"
           " every call); or hold one lock around " if ctx.without_gil() else
           "  What to do: run with TUNERGUARD_OPTIONS=mode=serialize; or call ")
    expect((fix in text and text.count(shown) >= 3 and "?:" not in text),
           "the text report shows the byte as \\xff", res)
    objs = jsonl_lines(res)
    files = [fr["file"] for fr in objs[0]["entering"]["python"]]
    expect(any(f.endswith("run\\xff/prog.py") for f in files) and "?" not in files,
           "the JSON frame's file has the same four characters", res)
    cli = os.path.join(os.path.dirname(ctx.lib), "tunerguard")
    if os.access(cli, os.X_OK):
        rep = subprocess.run([cli, "report", res.files("tg.*.jsonl")[0]], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=ctx.env(preload=False))
        out = rep.stdout.decode(errors="replace")
        expect(shown in out and "?:" not in out, "tunerguard report shows it too:\n" + out, res)


def check_distinct_call_sites_reported(ctx):
    # One tuner, the same thread inside at the same place, the entering thread
    # calling it from two lines: two races (each call site is its own bug),
    # the repeat of either one not reported again.  Fails if the dedupe key
    # leaves out the entering thread's frames, on every interpreter.
    res = ctx.run_py(program('distinct_call_sites_reported'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered") == 2 and "in site_a" in text and "in site_b" in text,
           "two call sites into one tuner are two reports", res)
    expect(re.search(r"^tunerguard: 2 races reported \(3 seen\)", res.err, re.M), "summary: 2 of 3 seen", res)


CHECKS = [
    check_repeat_reported_once,
    check_verbosity2_writes_every_occurrence,
    check_distinct_races_reported,
    check_distinct_call_sites_reported,
    check_new_tuner_every_call_is_one_bug,
    check_report_cap,
    check_non_utf8_folder_escaped,
]
