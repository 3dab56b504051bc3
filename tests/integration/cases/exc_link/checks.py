"""Integration checks, group exc_link: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import re

from harness import expect, jsonl_lines, no_files, only_report, opts, race_prog, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (k) which exceptions of a raced call are linked to the race

# The victim parks inside tuner.run; the calling thread then makes CALLS
# calls of its own, each racing with it; then the victim is let go.  Each
# call's exception (and the victim's) is caught, and its notes kept.
def exc_link_prog(cls, fn, calls, tag):
    return program('exc_link', cls=cls, fn=fn, calls=calls, tag=tag)


def linked_exceptions(res):
    return [o for o in jsonl_lines(res) if o.get("kind") == "exception"]


def check_exception_own_keyerror_not_linked(ctx):
    """A KeyError the program raises itself (in its hook) inside a call that
    overlapped is the program's, not the race's: no note, no record."""
    res = ctx.run_py(exc_link_prog("Autotuner", "my_kernel", 1, "own"), options=opts())
    expect("ERRORS ['KeyError'] NOTES 0" in res.out, "the KeyError raised, without a note", res)
    expect(not linked_exceptions(res), "no exception record", res)
    expect("linked" not in res.err, "the exit line links none", res)


def check_exception_keyboard_interrupt_not_linked(ctx):
    """A KeyboardInterrupt raised inside the tuner's own frames (where a
    Ctrl-C lands) is never the race's."""
    res = ctx.run_py(exc_link_prog("Autotuner", "functools.partial(signal.default_int_handler, 2)", 1, "other"),
                     options=opts())
    expect("ERRORS ['KeyboardInterrupt', 'KeyboardInterrupt'] NOTES 0" in res.out, "both interrupted, no note",
           res)
    expect(not linked_exceptions(res), "no exception record", res)


def check_exception_every_linked_one_counted(ctx):
    """TypeErrors raised in the tuner's own frames (its shared state cleared)
    are linked, each one with a note, and the exit line counts every one;
    also through the program's own subclass (its run guarded, Triton's
    code raising)."""
    for cls in ("Autotuner", "Sub"):
        res = ctx.run_py(exc_link_prog(cls, "None", 3, "other"), options=opts())
        expect_four_linked(res)


def expect_four_linked(res):
    m = re.search(r"NOTES (\d+) NOTED (\d)", res.out)
    expect("ERRORS ['TypeError', 'TypeError', 'TypeError', 'TypeError']" in res.out and m, "four TypeErrors", res)
    expect(int(m.group(1)) == 4 * int(m.group(2)), "a note on each (3.11+)", res)
    linked = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(linked and int(linked.group(1)) == 4, "the exit line counts the 4 linked exceptions", res)
    expect(linked_exceptions(res), "an exception record", res)


# A fast-path call ("fast") is inside; B and C enter after it and go on to
# benchmark (a low-severity overlap at each entry: nothing was benchmarking
# yet; without the GIL a race at each entry, the calls running at once).  The fast call returns and clears the arguments both read next: both
# TypeErrors are the race's.  B sits in a lower occupant slot than C, so the
# check at that return finds B first; C is released first, so no later
# return links it.  Broken (only the first occupant found linked at the
# return), C's TypeError has no note and no record.
CLEARED_AT_EXIT_PROG = program('cleared_at_exit')


def check_exception_every_cleared_call_linked(ctx):
    """Two calls benchmarking when another call's return clears the tuner's
    arguments: both TypeErrors are linked to that race, not just the first
    call the check at the return finds."""
    res = ctx.run_py(CLEARED_AT_EXIT_PROG, options=opts())
    expect("ERRORS [('B', 'TypeError'), ('C', 'TypeError')]" in res.out, "B and C raised TypeError", res)
    if ctx.without_gil():
        # Without the GIL B's and C's entries on fast's call are races
        # themselves (the calls run at once): B's written, C's its repeat,
        # each session linked at its entry.  Which race C's entry links B
        # to (it may take B as the thread inside) decides whether B's
        # exception follows the written race or the repeat.
        races = [o for o in jsonl_lines(res) if o.get("kind") == "race"]
        expect([(o["severity"], o["seen_at"], o.get("gil"), o["entering"]["name"]) for o in races]
               == [("high", "entry", "off", "B")], "B's entry reported, without the GIL", res)
        expect(re.search(r"^tunerguard: 1 race reported \(2 seen\)", res.err, re.M), "C's entry its repeat", res)
        exc = linked_exceptions(res)
        expect(1 <= len(exc) <= 2 and all(o["race_seq"] in (races[0]["seq"], None) for o in exc),
               "exception records following B's race or its repeat", res)
    else:
        expect(len(linked_exceptions(res)) == 1, "one exception record (the second is its repeat)", res)
    m = re.search(r"NOTES (\[.*?\]) NOTED (\d)", res.out)
    want = "[('B', 1), ('C', 1)]" if m and m.group(2) == "1" else "[('B', 0), ('C', 0)]"
    expect(m and m.group(1) == want, "a note on each (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 2, "the exit line counts both", res)


# One thread, one call of a subclass whose run() calls _bench with the
# tuner's `nargs` attribute gone (a tuner that keeps its arguments elsewhere),
# then, as a control, with it None: only None is what another call's return
# left (the race seen when a call begins tuning).  Broken (a missing
# attribute taken for a cleared one), the first call is reported as a race.
NO_NARGS_PROG = program('no_nargs')


def check_no_nargs_attribute_not_cleared(ctx):
    """A tuner with no `nargs` attribute at all has not had its arguments
    cleared: no race when its call begins tuning.  None is (the control)."""
    res = ctx.run_py(NO_NARGS_PROG, options=opts(), extra_env={"NARGS": "drop"})
    expect(res.rc == 0 and "RESULT one False" in res.out, "ran, the attribute gone", res)
    expect(res.err == "", "nothing said", res)
    no_files(res, "no report")
    res = ctx.run_py(NO_NARGS_PROG, options=opts(), extra_env={"NARGS": "keep"})
    expect(res.rc == 0 and "RESULT one True" in res.out, "ran, the attribute None", res)
    _, text = only_report(res)
    expect("another call cleared a tuner call's arguments before it began tuning" in text,
           "the control: None is reported as cleared", res)


# serialize: the main thread's call waits for the turn (held by the thread
# inside, which keeps running Python code), goes on without it past the
# bypass, and then waits for the tuner: one call, two waits.  The thread
# inside runs until that second wait has begun (the second serialize_wait
# audit event), with a safety time-out.  Broken (each wait counted), the
# exit line says 2 calls serialized.  Where the GIL is off there is no turn:
# one wait, the tuner's, and still one call.
TWO_WAITS_PROG = program('two_waits')


def check_exit_line_one_count_per_call(ctx):
    """serialize: a call that waited for the turn and then for the tuner is
    one serialized call on the exit line."""
    res = ctx.run_py(TWO_WAITS_PROG, options=opts(mode="serialize"))
    expect(res.rc == 0 and ("WAITS 2 WANT 2" in res.out or "WAITS 1 WANT 1" in res.out),
           "the call waited for the turn, then for the tuner (without the GIL: for the tuner)", res)
    line = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard: ")]
    expect(line and "; 1 call serialized, waited " in line[-1], "one call serialized", res)


# serialize: a wait still going when the program exits (a daemon thread
# waits for a tuner a daemon holder never leaves).  The main thread sees the
# wait begin (the serialize_wait audit event: the turn's), then lets 0.3 s
# pass and returns.  The exit line counts the call and its time so far, at
# least those 0.3 s, and says one is still waiting.  Broken, it said nothing
# of that call ("waited 0.000 s", or no line at all).
STILL_WAITING_PROG = program('still_waiting')


def check_exit_line_counts_wait_in_progress(ctx):
    """serialize: a wait not over at exit is in the exit line's count and
    total."""
    res = ctx.run_py(STILL_WAITING_PROG, options=opts(mode="serialize"))
    m = re.search(r"WAITED AT LEAST ([0-9.]+)", res.out)
    expect(res.rc == 0 and m, "the waiter began waiting, the program ended", res)
    line = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard: ")]
    w = re.search(r"(\d+) calls? serialized, waited ([0-9.]+) s in total \(1 still waiting at exit\)",
                  line[-1] if line else "")
    expect(w and int(w.group(1)) == 1 and float(w.group(2)) >= float(m.group(1)) - 0.002,
           "the wait still going is counted, its time so far included", res)


# Ten threads inside one tuner at once, more than its entry has occupant
# slots (8): each parks in its benchmark until all ten are in, then each
# raises TypeError in the tuner's own code.  Every one of them raced, so
# every one is linked.  Broken (the link kept on the occupant slot only),
# the two threads without a slot raise without a note.
OVERFLOW_PROG = program('overflow')


def check_exception_linked_past_occupant_slots(ctx):
    """More threads inside one tuner than it has occupant slots: every
    thread's exception is linked, the ones without a slot too."""
    res = ctx.run_py(OVERFLOW_PROG, options=opts())
    m = re.search(r"ERRORS (\d+) \['TypeError'\] NOTES (\d+) NOTED (\d)", res.out)
    expect(m and m.group(1) == "10", "ten TypeErrors", res)
    linked = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(linked and int(linked.group(1)) == 10, "the exit line counts ten linked", res)
    expect(int(m.group(2)) == 10 * int(m.group(3)), "a note on each (3.11+)", res)


# The call whose return clears the arguments has no occupant slot: 'tuner'
# entered first and 7 fast-path calls after it hold the tuner's 8 slots
# (verbosity=1: registered sessions from the first call on), then 'fast'
# enters with none left.  'tuner' goes on to benchmark and parks there;
# 'fast' returns (self.nargs = None); 'tuner' reads the arguments: TypeError.
# Nobody was benchmarking at any entry, so only the check at fast's return
# can link it.  Broken (no check for a session without a slot), tuner's
# TypeError has no note and is not counted.
SLOTLESS_CLEAR_PROG = program('slotless_clear')


def check_exception_linked_by_slotless_return(ctx):
    """A return without an occupant slot clears the arguments a benchmarking
    call reads next: that call's TypeError is linked to the race."""
    res = ctx.run_py(SLOTLESS_CLEAR_PROG, options=opts(verbosity=1))
    expect("ERRORS [('tuner', 'TypeError')]" in res.out, "tuner raised TypeError, nobody else", res)
    m = re.search(r"NOTES \[\('tuner', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(2), "a note on it (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 1, "the exit line counts it", res)


def check_exit_line_tuner_without_kernel_name(ctx):
    """serialize, a tuner whose function has no __name__: the exit line names
    the contended tuner by its method, never '?'."""
    prog = race_prog(True).replace("Autotuner(my_kernel)", "Autotuner(functools.partial(my_kernel))")
    res = ctx.run_py("import functools\n" + prog, options=opts(mode="serialize"))
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    line = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard: ")]
    expect(line and "(contended: Autotuner.run)" in line[-1], "the method named", res)
    expect("?" not in line[-1], "no '?' on the exit line", res)


def check_exit_line_many_contended(ctx):
    """serialize, five kernels with long names each made a thread wait: the
    exit line names the first three whole and counts the rest; no name is
    cut short.  Broken (names joined until the buffer ends), the fourth and
    fifth names are missing without a count, or one is cut."""
    names = ["contended_kernel_%d_%s" % (i, "x" * 60) for i in range(5)]
    prog = "    import types\n    keep = []\n"  # alive: a tuner is known by its address
    for n in names:
        prog += ("    keep.append(Autotuner(types.FunctionType(my_kernel.__code__, globals(), %r)))\n"
                 "    race_once(keep[-1], serialize=True)\n" % n)
    res = ctx.run_py("    from triton.runtime.autotuner import Autotuner\n" + prog + "    print('DONE')\n",
                     options=opts(mode="serialize"))
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    line = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard: ")]
    m = re.search(r"\(contended: (.*?)\)", line[-1] if line else "")
    expect(m, "a contended list", res)
    expect(m.group(1) == ", ".join(names[:3]) + " and 2 more", "three names whole, then the count", res)


# Two calls benchmark at once ('t1' and 't2': each entered while nobody was
# benchmarking, then went into its benchmark and parks there); 'fast' enters
# (a race, reported with one of them, the first found), returns and clears
# the arguments; 't1' and 't2' read them: a TypeError each.  Nobody began
# benchmarking during fast's call, so its return makes no check: only fast's
# entry can link them.  Broken (the entry links the one thread it reports
# with), the other's TypeError has no note and is not counted.
TWO_BENCHMARKING_PROG = program('two_benchmarking')


def check_exception_linked_for_every_benchmarking_call(ctx):
    """A race at entry while two calls benchmark: the entering call's return
    clears what both read next, and both TypeErrors are linked."""
    res = ctx.run_py(TWO_BENCHMARKING_PROG, options=opts())
    expect("ERRORS [('t1', 'TypeError'), ('t2', 'TypeError')]" in res.out, "t1 and t2 raised TypeError", res)
    m = re.search(r"NOTES \[\('t1', (\d)\), \('t2', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(3) and m.group(2) == m.group(3), "a note on each (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 2, "the exit line counts both", res)


# The call that raises has no occupant slot: eight fast-path calls hold the
# tuner's 8 slots (verbosity=1: registered from the start), 'tuner' enters
# without one, goes into its benchmark and parks there; one filler returns
# (self.nargs = None); 'tuner' reads the arguments: TypeError.  The check at
# the filler's return looks at the slots and finds nobody benchmarking, so
# only tuner's own return can link it.  Broken, tuner's TypeError has no
# note and is not counted.
SLOTLESS_RAISE_PROG = program('slotless_raise')


def check_exception_linked_without_slot(ctx):
    """A benchmarking call without an occupant slot reads arguments another
    call's return cleared: its TypeError is linked."""
    res = ctx.run_py(SLOTLESS_RAISE_PROG, options=opts(verbosity=1))
    expect("ERRORS [('tuner', 'TypeError')]" in res.out, "tuner raised TypeError, nobody else", res)
    m = re.search(r"NOTES \[\('tuner', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(2), "a note on it (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 1, "the exit line counts it", res)


# As above, but the call that clears enters after 'tuner' began to
# benchmark ('fast', without a slot too) and returns while nobody begins
# tuning: its entry saw nobody benchmarking in a slot, and its return is
# checked only because sessions without a slot are inside.  Broken, tuner's
# TypeError has no note and is not counted.
SLOTLESS_LATE_CLEAR_PROG = program('slotless_late_clear')


def check_exception_linked_without_slot_late_clear(ctx):
    """A call entering while a benchmarking call without a slot is inside
    returns and clears its arguments: that call's TypeError is linked."""
    res = ctx.run_py(SLOTLESS_LATE_CLEAR_PROG, options=opts(verbosity=1))
    expect("ERRORS [('tuner', 'TypeError')]" in res.out, "tuner raised TypeError, nobody else", res)
    m = re.search(r"NOTES \[\('tuner', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(2), "a note on it (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 1, "the exit line counts it", res)


# The thread a race at entry names leaves while the entering thread waits
# for the report lock: 't1' and 't2' benchmark in tuner A (both entered
# while nobody benchmarked), 'holder' holds the report lock (its race on
# tuner B reads its name, which parks), 'fast' enters A (a race with t1)
# and waits for the lock; t1 leaves by an exception of its own (no clear,
# no check); the lock is released; fast returns and clears the arguments
# (nobody began tuning meanwhile: no check at its return); t2 reads them:
# TypeError (b1's too: holder's return clears B's).  Broken (the race
# dropped because t1 left), t2's TypeError has no note and is not counted.
# A run() without a finally, as Triton's.
LEFT_WHILE_REPORTING_PROG = program('left_while_reporting')


def check_exception_linked_when_reported_one_left(ctx):
    """A race at entry whose benchmarking thread left while the report lock
    was awaited is the race of another still benchmarking: that one's
    TypeError is linked."""
    res = ctx.run_py(LEFT_WHILE_REPORTING_PROG, options=opts())
    expect("ERRORS [('b1', 'TypeError'), ('t1', 'RuntimeError'), ('t2', 'TypeError')]" in res.out,
           "t1 its own error, t2 TypeError (and b1, whose arguments holder cleared)", res)
    m = re.search(r"NOTES \[\('b1', (\d)\), \('t1', 0\), \('t2', (\d)\)\] NOTED (\d)", res.out)
    expect(m and m.group(1) == m.group(3) and m.group(2) == m.group(3), "a note on t2's and b1's (3.11+)", res)
    line = re.search(r"^tunerguard: .*, (\d+) exceptions? linked to them", res.err, re.M)
    expect(line and int(line.group(1)) == 2, "the exit line counts both", res)


CHECKS = [
    check_exception_own_keyerror_not_linked,
    check_exception_keyboard_interrupt_not_linked,
    check_exception_every_linked_one_counted,
    check_exit_line_tuner_without_kernel_name,
    check_exit_line_many_contended,
    check_exit_line_one_count_per_call,
    check_exit_line_counts_wait_in_progress,
    check_exception_linked_past_occupant_slots,
    check_exception_linked_by_slotless_return,
    check_exception_linked_for_every_benchmarking_call,
    check_exception_linked_without_slot,
    check_exception_linked_without_slot_late_clear,
    check_exception_linked_when_reported_one_left,
    check_exception_every_cleared_call_linked,
    check_no_nargs_attribute_not_cleared,
]
