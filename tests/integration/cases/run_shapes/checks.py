"""Integration checks, group run_shapes: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import re
import subprocess

from harness import expect, only_report, opts, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (d') a tuner subclass whose run is no plain function of its own: what a
# call runs is guarded (a mixin's function, a partialmethod's function), or
# one line names the class whose run is left unguarded and why (a property,
# another descriptor).  Each run is a run of its own, which never calls
# Autotuner.run: guarded only where its own entry is.

def shape_part(shape, serialize):
    """cases/run_shapes/shape_<shape>.py: the mixin's program races too."""
    return program("shape_" + shape, **({"serialize": serialize} if shape == "mixin" else {}))


def shape_prog(shape, serialize, middle=""):
    return program("shape_prelude") + shape + middle + program("shape_race", serialize=serialize)


def run_shape(ctx, shape, mode):
    prog = shape_prog(shape_part(shape, mode == "serialize"), mode == "serialize")
    return ctx.run_py(prog, options=opts(mode=mode))


# run set on a tuner instance, found at its first tuning call: the function
# the bound method calls is guarded from then on (in its vectorcall slot), or,
# on 3.11 (no such slot), said to run unguarded.
INSTANCE_LINE = {False: "a __main__.Tuner instance has run set on itself (a method of own_run), which shadows "
                        "Tuner.run: own_run is guarded from now on",
                 True: "a __main__.Tuner instance has run set on itself (a method), which shadows Tuner.run: "
                       "calls of it run unguarded"}


def interpreter_minor(ctx):
    if not hasattr(ctx, "minor"):
        out = subprocess.run([ctx.python, "-c", "import sys; print(sys.version_info[1])"], capture_output=True,
                             text=True, env=ctx.env(preload=False))
        ctx.minor = int(out.stdout)
    return ctx.minor


def check_run_shape_instance_guarded(ctx):
    """run set on the instance, the tuner's first call made alone: the race
    of later calls is reported (detect) and prevented (serialize); 3.11: the
    line says they run unguarded, and nothing is reported."""
    unguarded = interpreter_minor(ctx) == 11
    for mode, kind in (("detect", "method"), ("serialize", "method"), ("detect", "partial")):
        shape = shape_part("instance", mode == "serialize")
        if kind == "partial":
            shape = shape.replace("types.MethodType(own_run, self)", "functools.partial(own_run, self)")
        prog = shape_prog(shape, mode == "serialize", program("shape_instance_alone"))
        res = ctx.run_py(prog, options=opts(mode=mode))
        expect(res.rc == 0 and "DONE" in res.out, "%s: program ran" % mode, res)
        lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
        want = INSTANCE_LINE[unguarded].replace("(a method", "(a " + kind)
        expect(lines and want in lines[0], "%s, %s: the line" % (mode, kind), res)
        if unguarded:
            expect("ORDER victim:start,other:start,other:end,victim:end" in res.out and not res.files("tg.*"),
                   "3.11 %s: unguarded, nothing reported" % mode, res)
        elif mode == "detect":
            _, text = only_report(res)
            expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1 and "Tuner.run" in text,
                   "detect: the later race reported", res)
        else:
            expect("ORDER victim:start,victim:end,other:start,other:end" in res.out
                   and re.search(r"^tunerguard: .*; 1 call serialized", res.err, re.M),
                   "serialize: the later race prevented", res)


def check_run_shape_guarded(ctx):
    """A mixin's run, and a partialmethod's function: a race through them is
    reported (detect) and prevented (serialize); the mixin's calls on an
    instance of another class are no session."""
    for shape, method in (("mixin", "RunMixin.run"), ("partialmethod", "Tuner.run")):
        res = run_shape(ctx, shape, "detect")
        expect(res.rc == 0 and "DONE" in res.out, "%s: program ran" % shape, res)
        expect("ORDER victim:start,other:start,other:end,victim:end" in res.out, "%s: the overlap was forced" % shape,
               res)
        _, text = only_report(res)
        expect(text.count("WARNING: tunerguard: thread entered a tuner") == 1 and method in text,
               "%s: one race reported, in %s" % (shape, method), res)
        res = run_shape(ctx, shape, "serialize")
        expect(res.rc == 0 and "DONE" in res.out, "%s serialize: program ran" % shape, res)
        # (a wait for the turn that passes its bound on a loaded machine
        # is followed by one for the tuner: two events, one call)
        expect("ORDER victim:start,victim:end,other:start,other:end" in res.out
               and re.search(r"^WAIT_EVENTS [12]$", res.out, re.M)
               and re.search(r"^tunerguard: .*; 1 call serialized", res.err, re.M),
               "%s serialize: the second call waited until the first ended" % shape, res)
        expect(shape != "mixin" or "NOT_A_TUNER_WAITS 0" in res.out,
               "mixin serialize: no wait in the mixin's other user's overlap", res)


def check_run_shape_said(ctx):
    """A property, another descriptor: what a call runs is decided at each
    access; run set on the instance: nothing announces it.  One line names
    the class and says its run is unguarded (the instance's when a tuning
    method runs outside any guarded call)."""
    wants = {"property": "__main__.Tuner.run is a property, not a function",
             "descriptor": "__main__.Tuner.run is a Bound, not a function",
             "instance": INSTANCE_LINE[interpreter_minor(ctx) == 11]}
    for shape, want in wants.items():
        res = run_shape(ctx, shape, "detect")
        expect(res.rc == 0 and "DONE" in res.out, "%s: program ran" % shape, res)
        lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
        expect(len(lines) == 1 and want in lines[0] and "unguarded" in lines[0],
               "%s: one line names the class and why its run is unguarded" % shape, res)
    # run set on the instance, called from inside another tuner's guarded
    # call (a kernel tuned inside another's benchmark): said as well.
    res = ctx.run_py(program("shape_prelude") + shape_part("instance", False) + program("shape_instance_inside_other"),
                     options=opts())
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "ok" in res.out and len(lines) == 1 and wants["instance"] in lines[0],
           "instance, inside another tuner's call: one line", res)


CHECKS = [
    check_run_shape_guarded,
    check_run_shape_said,
    check_run_shape_instance_guarded,
]
