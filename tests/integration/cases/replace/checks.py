"""Integration checks, group replace: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import os
import re

from harness import expect, jsonl_lines, no_files, only_report, opts, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (e) user code replaces a guarded method

def check_replaced_method(ctx):
    res = ctx.run_py(program('replaced_method'), options=opts(verbosity=1))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect(re.search(r"^tunerguard: Autotuner\.run was replaced.*locked.*prog\.py:\d+.*guarded", res.err, re.M),
           "stderr says it was replaced (by locked at prog.py:N) and guarded", res)
    expect("GUARDED_AFTER True" in res.out, "the replacement is guarded", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: guarded method replaced") == 1
           and re.search(r"Autotuner\.run = locked at .*prog\.py:\d+", text),
           "verbosity=1: a method_replaced report names the replacement and where it is defined", res)
    expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1,
           "the race through the replacement is reported", res)
    kinds = [o["kind"] for o in jsonl_lines(res)]
    expect(kinds == ["method_replaced", "race"], "JSON Lines: method_replaced, then race (got %s)" % kinds, res)


REPLACED_COPY_PROG = program('replaced_copy')


def check_replaced_copy_before_first_call(ctx):
    """The program puts its own copy of Autotuner.run on the class before the
    first call (one that never calls the original): guarded from its first
    call.  detect: the race is reported, through my_run; serialize: no
    TypeError, every call saw its own nargs and counter."""
    res = ctx.run_py(REPLACED_COPY_PROG, options=opts(verbosity=1))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect(re.search(r"^tunerguard: Autotuner\.run was replaced by my_run defined at .*prog\.py:\d+", res.err, re.M),
           "the assignment itself is noticed", res)
    _, text = only_report(res)
    expect("WARNING: tunerguard: thread entered a tuner" in text and "my_run" in text,
           "detect: the race through the replacement is reported, naming it", res)
    res = ctx.run_py(REPLACED_COPY_PROG, options=opts(mode="serialize"))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect("TYPEERRORS 0 RESULTS [(1, 1)] 6" in res.out, "serialize: no TypeError, counters right", res)


def check_setattr_paths(ctx):
    """Class attribute assignment behaves as without tunerguard on every path
    once replacements are watched (type's __setattr__ hooked): a metaclass's
    super().__setattr__, an Enum, an ABC, type.__setattr__ called directly,
    object.__setattr__ refused on a class; and a replacement made through a
    metaclass that defines __setattr__ is guarded."""
    res = ctx.run_py(program('setattr_paths'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out and "VALUES 1 2 3 4 5" in res.out, "every assignment made", res)
    expect("OBJECT can't apply this __setattr__ to type object" in res.out, "object.__setattr__ refused as always", res)
    expect("SUB mine True" in res.out, "a replacement through a metaclass's __setattr__ is guarded", res)


def check_replaced_method_late_alternating(ctx):
    """A replacement made after the guards are warm is found whatever the
    pattern of calls: a thread alternating between two guards (a check every
    64th call of the thread, counted for all guards together, never checked
    one of them)."""
    for off in (0, 1):
        res = ctx.run_py(program("replaced_method_late_alternating", off=off), options=opts(verbosity=1))
        expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
        expect(re.search(r"^tunerguard: Autotuner\.run was replaced", res.err, re.M),
               "offset %d: the late replacement is found" % off, res)


def check_replaced_method_silent(ctx):
    """verbosity 0: the replacement is guarded without a word or a file."""
    res = ctx.run_py(program('replaced_method_silent'), options=opts())
    expect(res.rc == 0 and "GUARDED_AFTER True" in res.out and res.err == "", "guarded, silent", res)
    no_files(res)


def check_replaced_method_patch_restore_loop(ctx):
    """A program that patches the method with a new function and restores it,
    300 times (a closure made per step): every replacement is guarded, a
    freed one's slot taken again (on 3.11, where descriptor guards keep their
    slots, until the table of guards is full, then one line says so and the
    later ones run as they are); every call runs its own replacement, a bound
    method taken from the first one (whose slot stays taken) still runs the
    first one, and a race through the last (a wrapper calling the original)
    is still reported by the original's guard."""
    res = ctx.run_py(program('replaced_method_patch_restore_loop'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out and "WRONG [] HELD ('patched', 0)" in res.out,
           "every call ran its own replacement, the held bound method the first", res)
    m = re.search(r"GUARDED (\d+)", res.out)
    others = [ln for ln in res.err.splitlines() if not re.match(r"tunerguard: \d+ races? reported", ln)]
    if "MINOR 11" in res.out:
        expect(m and 200 <= int(m.group(1)) < 256, "replacements guarded until the table was full", res)
        expect(len(re.findall(r"^tunerguard: more than 256 guarded methods; run and later ones are not guarded$",
                              res.err, re.M)) == 1 and len(others) == 1,
               "one line when the table filled, nothing more (and the exit line)", res)
    else:
        expect(m and int(m.group(1)) == 300 and not others, "every replacement guarded, nothing said", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1,
           "the race through the last replacement is reported by the original's guard", res)


def check_signature(ctx):
    """inspect.signature() of a guarded method works (it raised ValueError);
    where the guard is in the vectorcall slot it is the function's own."""
    res = ctx.run_py(program('signature'), options=opts())
    expect(res.rc == 0 and "GUARDED True" in res.out, "guarded", res)
    expect(("SIG (self, /, *args, **kwargs)" in res.out or "SIG (self, *args, **kwargs)" in res.out)
           and "BOUND (*args, **kwargs)" in res.out, "a signature that passes everything through", res)


def check_guard_identity(ctx):
    """A guarded method is the program's own function to introspection
    (getsource, __code__, __module__, __globals__, a bound method's __func__,
    isfunction, the signature, a class that borrows it, MagicMock(spec=)),
    and stays guarded; its class's namespace is as without tunerguard (the
    subclass watch puts nothing there).  3.11 (a method descriptor there):
    only guarded, and the namespace."""
    res = ctx.run_py(program('guard_identity'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out and "GUARDED True True" in res.out, "program ran, guarded", res)
    expect("ATEXIT 0" in res.out, "no atexit function of tunerguard's", res)
    expect("VARS True" in res.out and "LATER True" in res.out,
           "the class's namespace as without tunerguard, and a subclass made later guarded", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1, "the race is reported", res)
    if "MINOR 11" in res.out:
        return
    for want in ("SRC True", "CODE True", "ISFUNC True", "FUNC True", "SIG (self, *args, **kwargs)",
                 "DUCK ", "MOCK MagicMock"):
        expect(re.search("^" + re.escape(want), res.out, re.M) and "DUCK ERROR" not in res.out,
               "introspection as without tunerguard: %s" % want, res)


def check_guard_lifetime(ctx):
    """A guard keeps neither its class nor its function alive, and a function
    that outlives its class still runs, guarded, without its class.  On 3.11
    (a method descriptor put on the class, which alone holds it): the class
    is freed, and a bound method that outlives its class still runs."""
    res = ctx.run_py(program('guard_lifetime'), options=opts(targets="lifemod:Base.run"))
    expect(res.rc == 0 and "DONE" in res.out and "SUB_GUARDED True 2" in res.out, "program ran, Sub guarded", res)
    if "MINOR 11" not in res.out:
        expect("CLASS_GONE True FUNCTION_GONE True" in res.out, "the class and its function were freed", res)
        expect("KEPT True 3" in res.out, "a function that outlived its class ran", res)
    else:
        expect("CLASS_GONE True" in res.out, "the class was freed (3.11: its guard's descriptor with it)", res)
        expect("BOUND False 3" in res.out and "BOUND_GONE True" in res.out,
               "a bound method kept the class, ran guarded, and let it go", res)


def check_replaced_same_function_again(ctx):
    """The same patch made and undone 300 times (one function, a fixture
    per test): each assignment is guarded, and on 3.11, where a guard is a
    descriptor, the function put back reuses its guard, so the table of
    guards never fills (one line would say so)."""
    res = ctx.run_py(program('replaced_same_function_again'), options=opts(targets="patchmod:T.run"))
    expect(res.rc == 0 and "GUARDED True 4" in res.out and "DONE" in res.out, "patched 300 times: still guarded", res)
    expect("guarded methods" not in res.err, "the guard table did not fill", res)


def check_new_functions_take_freed_slots(ctx):
    """300 tests each patching in a new function (mock.patch.object(T, "run",
    new=...)), each freed when its patch is undone: where a guard is the
    function's vectorcall (not 3.11), a freed function's guard slot is taken
    again, so the table never fills and the last patch is guarded.  On 3.11
    (descriptor guards keep their slots) the table fills: one line."""
    res = ctx.run_py(program('new_functions_take_freed_slots'), options=opts(targets="patchmod2:T.run", verbosity=2))
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    full = res.err.count("guarded methods; ")
    if "MINOR 11" in res.out:
        expect(full == 1, "3.11: the full table said once", res)
    else:
        expect(full == 0 and "LAST_GUARDED True" in res.out and "PLAIN_GUARDED True" in res.out,
               "freed functions' slots taken again: the last guarded", res)
        named = re.findall(r"^tunerguard: guarding (\S+) \(replaced by user code\)$", res.err, re.M)
        expect(len(named) >= 600 and set(named) == {"T.run"},
               "every replacement guarded under its own name: %s" % sorted(set(named)), res)


def check_descriptor_guard_keeps_class_semantics(ctx):
    """What a class does stays as without tunerguard on every version, also
    where a guard is a method descriptor (3.11): an abstract run stays
    abstract, a metaclass's own __setattr__ never sees tunerguard's
    assignment (one that wraps what it is given would wrap the guard again
    at every replacement check), and an override keeps its docstring."""
    res = ctx.run_py(program('descriptor_guard_keeps_class_semantics'), options=opts(targets="semmod:Base.run"))
    expect(res.rc == 0 and "DONE" in res.out, "program completed", res)
    expect("ABSTRACT refused" in res.out and "ABSTRACTS ['run'] []" in res.out, "an abstract run stays abstract", res)
    expect("DOC Runs x. 2 True" in res.out, "a guarded override keeps its docstring", res)
    expect("META [] [0, 2, 4] True" in res.out, "the metaclass saw no assignment; the guard was not wrapped", res)
    expect("guarded methods" not in res.err, "the guard table did not fill", res)


HOT_PROG = program('hot')


def check_guard_hot_calls(ctx):
    """Every way of calling a guarded simple-signature method, in loops hot
    enough for the specializing interpreter, passes through the guard: in
    serialize, each call made while another thread is inside waits (one
    tunerguard.serialize_wait event each); also after `__code__` is
    replaced."""
    res = ctx.run_py(HOT_PROG, options=opts(mode="serialize", targets="hotmod:K.m"))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    styles = re.findall(r"^STYLE (\w+) (\d+) of (\d+)$", res.out, re.M)
    expect(len(styles) == 9 and "RESULT 2" in res.out or len(styles) == 8 and "MINOR 11" in res.out,
           "every call style ran (the new __code__ ran)", res)
    bad = [s for s in styles if s[1] != s[2]]
    expect(not bad, "every call waited for the thread inside (guarded): %s" % bad, res)


TARGETS_MOD = program('targets')


def check_targets_unguarded(ctx):
    """A targets= entry that guards nothing says why, once, in one line."""
    res = ctx.run_py(TARGETS_MOD, options=opts(
        targets="mymod:Sub.run,mymod:Nope.run,mymod:S2.run,mymod:Base.rnu,notimported:X.run"))
    expect(res.rc == 0 and "BASE_GUARDED False" in res.out, "program ran, nothing guarded", res)
    want = [r"targets=mymod:Sub\.run: Sub does not define run itself \(it inherits it\): name the class",
            r"targets=mymod:Nope\.run: module mymod has no class Nope; nothing guarded",
            r"targets=mymod:S2\.run: S2\.run is a staticmethod, not a plain function",
            r"targets=mymod:Base\.rnu: class Base has no method rnu; nothing guarded"]
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    for w in want:
        expect(sum(bool(re.search(w, ln)) for ln in lines) == 1, "one line: %s" % w, res)
    expect(len(lines) == len(want), "nothing else said (a module never imported is not an error)", res)
    # Base.run named too: Sub inherits the guarded method, nothing to say.
    res = ctx.run_py(TARGETS_MOD, options=opts(targets="mymod:Base.run,mymod:Sub.run"))
    expect(res.rc == 0 and "BASE_GUARDED True" in res.out and res.err == "", "guarded, silent", res)
    # Two targets on one class: the one that guards nothing still says so.
    res = ctx.run_py(TARGETS_MOD, options=opts(targets="mymod:Base.run,mymod:Base.rnu"))
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "BASE_GUARDED True" in res.out and len(lines) == 1
           and "targets=mymod:Base.rnu: class Base has no method rnu" in lines[0], "the sibling's line", res)
    # A class of the script itself: arming runs before the script, which is
    # never imported after, so it cannot be guarded: one line says so (not
    # "module __main__ has no class Foo").
    res = ctx.run_py(program('targets_unguarded'), options=opts(targets="__main__:Foo.run"))
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "FOO_GUARDED False" in res.out and len(lines) == 1
           and "classes of the script itself (__main__) cannot be guarded" in lines[0], "__main__ target", res)


def check_targets_module_run_with_dash_m(ctx):
    """targets= names a module the program runs with python -m: it is
    __main__, never imported under its name, so its classes are never
    guarded: one line says so."""
    tmp = ctx.tmpdir()
    with open(os.path.join(tmp, "umod.py"), "w") as f:
        f.write("class Tuner:\n    def run(self, x):\n        return x\nprint('RAN', Tuner().run(1))\n")
    res = ctx.run_argv([ctx.python, "-m", "umod"], options=opts(targets="umod:Tuner.run"), cwd=tmp)
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "RAN 1" in res.out, "the program ran", res)
    expect(len(lines) == 1 and "umod runs as the program itself (python -m umod), as __main__" in lines[0],
           "one line says its classes cannot be guarded", res)
    res = ctx.run_argv([ctx.python, "-c", "import umod"], options=opts(targets="umod:Tuner.run"), cwd=tmp)
    expect(res.rc == 0 and "tunerguard" not in res.err, "imported by name: nothing said", res)


def check_targets_deferred_body(ctx):
    """An async def, async generator or generator method named in targets=
    returns before its body runs: one line each says it cannot be guarded,
    and it runs as without tunerguard."""
    res = ctx.run_py(program('targets_deferred_body'), options=opts(targets="defmod:T.a,defmod:T.ag,defmod:T.g"))
    expect(res.rc == 0 and "RAN 1 [2] [3]" in res.out and "GUARDED [False, False, False]" in res.out,
           "ran as without tunerguard, nothing guarded", res)
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    for what in ("defmod:T.a is a coroutine function (async def)", "defmod:T.ag is an async generator function",
                 "defmod:T.g is a generator function"):
        expect(sum(what in ln and "nothing guarded" in ln for ln in lines) == 1, "one line: " + what, res)
    expect(len(lines) == 3, "nothing else said", res)


DECLARED_PROG = program('declared')


def check_declared_repeats_keep_refcounts(ctx):
    """A declared tuner (targets=) raced 200 times from one call site: one
    report, 200 seen, and the repeats, counted before any capture, leave the
    reference counts of the tuner's class and instance as they were."""
    res = ctx.run_py(DECLARED_PROG, options=opts(targets="decl:Tuner.run"))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect("REFS 0 0" in res.out, "reference counts as they were", res)
    expect(re.search(r"^tunerguard: 1 race reported \(200 seen\)", res.err, re.M), "one report, 200 seen", res)
    # Suppressed: no report, and each of the 200 counted on its suppression
    # (the repeats too, which skip the capture).
    supp = os.path.join(ctx.tmpdir(), "decl.supp")
    with open(supp, "w") as f:
        f.write("race:^Tuner.run$\n")
    res = ctx.run_py(DECLARED_PROG, options=opts(targets="decl:Tuner.run", suppressions=supp, verbosity=1))
    expect(res.rc == 0 and "DONE" in res.out and "REFS 0 0" in res.out, "program ran, counts as they were", res)
    expect(re.search(r"^tunerguard:\s+200 race:\^Tuner\.run\$ \(line 1\)", res.err, re.M),
           "the suppression counted 200 times", res)
    # A tuning step that cannot be marked (misspelled): every overlap stays a
    # race, as its line says.
    res = ctx.run_py(DECLARED_PROG, options=opts(targets="decl:Tuner.run", tuning="decl:Tuner.bnech"))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect("has no plain method bnech; its overlaps are races whatever the threads inside do" in res.err
           and re.search(r"^tunerguard: 1 race reported \(200 seen\)", res.err, re.M),
           "the line, and the races reported", res)


def check_replaced_tuning_method(ctx):
    """The program replaces a tuning method (Autotuner._bench = my_bench):
    the new one says when a thread tunes, as the original did, so a thread
    entering while another is inside my_bench is a race, reported (with the
    original _bench it is; unmarked, it was a low-severity overlap, counted
    and not reported)."""
    res = ctx.run_py(program('replaced_tuning_method'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1 and "Severity: high" in text,
           "the race inside the replaced tuning method is reported, high", res)


def check_metaclass_new_returns_other(ctx):
    """A metaclass whose __new__ returns something that is not a class, for
    a class made from a guarded one: returned as without tunerguard (the
    subclass watch read it as a class)."""
    res = ctx.run_py(program('metaclass_new_returns_other'), options=opts())
    expect(res.rc == 0 and "MADE bytes 400 True" in res.out and res.err == "", "as without tunerguard", res)


def check_replaced_by_async_said_once(ctx):
    """A guarded method replaced by an async def: one line, however often
    the original is called after (each call finds the replacement again)."""
    res = ctx.run_py(program('replaced_by_async_said_once'), options=opts())
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect(len(lines) == 1 and "is a coroutine function (async def)" in lines[0], "one line", res)


def check_target_non_ascii(ctx):
    """A class named with a non-ASCII identifier (str.isidentifier() accepts
    it) is guarded like any other; it was refused as a bad option."""
    res = ctx.run_py(program('target_non_ascii'), options=opts(targets="t\u00fcnmod:Tun\u00e9r.r\u00fcn"))
    expect(res.rc == 0 and "GUARDED True 7" in res.out, "the non-ASCII class is guarded and runs", res)
    expect(res.err == "", "nothing said", res)


def check_target_builtin_in_class_body(ctx):
    """`run = len` in a class body never binds self: left alone, one line."""
    res = ctx.run_py(program('target_builtin_in_class_body'), options=opts(targets="mymod:C.run"))
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "C False 3" in res.out, "the builtin called as before, unguarded", res)
    expect(len(lines) == 1 and "C.run is a builtin_function_or_method, not a plain function" in lines[0],
           "one line", res)


def check_target_class_refuses_setattr(ctx):
    """A class whose metaclass refuses every new attribute: its method is
    guarded all the same, with nothing said, and so is a subclass made later
    through the refusing metaclass.  Where the guard is the function's
    vectorcall (all but 3.11) nothing is set on the class; on 3.11 the
    descriptor is set as type.__setattr__ sets it, past the metaclass's own
    __setattr__ (the program's rule for its own assignments)."""
    res = ctx.run_py(program('target_class_refuses_setattr'), options=opts(targets="mymod:Frozen.run,mymod:Open.run"))
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "FROZEN True 5" in res.out and "OPEN True 6" in res.out, "ran; both guarded", res)
    expect("SUB True 7" in res.out, "a subclass made later guarded", res)
    expect("REFUSED frozen" in res.out, "the program's own assignment still refused", res)
    expect(not lines, "nothing said", res)


CHECKS = [
    check_replaced_method,
    check_replaced_copy_before_first_call,
    check_setattr_paths,
    check_replaced_method_late_alternating,
    check_replaced_method_silent,
    check_replaced_tuning_method,
    check_replaced_method_patch_restore_loop,
    check_signature,
    check_guard_identity,
    check_guard_hot_calls,
    check_guard_lifetime,
    check_replaced_same_function_again,
    check_new_functions_take_freed_slots,
    check_descriptor_guard_keeps_class_semantics,
    check_targets_unguarded,
    check_targets_deferred_body,
    check_targets_module_run_with_dash_m,
    check_declared_repeats_keep_refcounts,
    check_metaclass_new_returns_other,
    check_replaced_by_async_said_once,
    check_target_class_refuses_setattr,
    check_target_builtin_in_class_body,
    check_target_non_ascii,
]
