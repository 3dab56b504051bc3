"""Integration checks, group run_shapes: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import re
import subprocess

from harness import expect, only_report, opts


# --------------------------------------------------------------------------
# (d') a tuner subclass whose run is no plain function of its own: what a
# call runs is guarded (a mixin's function, a partialmethod's function), or
# one line names the class whose run is left unguarded and why (a property,
# another descriptor).  Each run is a run of its own, which never calls
# Autotuner.run: guarded only where its own entry is.

SHAPE_PRELUDE = """
    import functools, types
    from triton.runtime.autotuner import Autotuner
    def own_run(self, *args, **kwargs):
        self.nargs = dict(enumerate(args))  # kept on the shared tuner, as Triton's run does
        try:
            return self._bench(*args)
        finally:
            self.nargs = None
"""

SHAPES = {
    "partialmethod": """
    class Tuner(Autotuner):
        run = functools.partialmethod(own_run, mode="fast")
    """,
    "mixin": """
    class RunMixin:  # no tuner: its other users' calls are no sessions
        def run(self, *args, **kwargs):
            return own_run(self, *args, **kwargs)
    class Tuner(RunMixin, Autotuner):
        pass
    class NotATuner(RunMixin):
        def _bench(self, *args):
            self.hook(self, *args)
    race_once(NotATuner(), serialize=%(serialize)s)  # overlapping, but no tuner: no report, no wait
    print("NOT_A_TUNER_WAITS", len(_wait_events))
    """,
    "property": """
    class Tuner(Autotuner):
        @property
        def run(self):
            return types.MethodType(own_run, self)
    class MoreTuners(Tuner):  # inherits the property: said for Tuner, once
        pass
    """,
    "descriptor": """
    class Bound:
        def __get__(self, inst, owner=None):
            return self if inst is None else functools.partial(own_run, inst)
    class Tuner(Autotuner):
        run = Bound()
    """,
    "instance": """
    class Tuner(Autotuner):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.run = types.MethodType(own_run, self)  # shadows the class's guarded run
    """,
}

SHAPE_RACE = """
    tuner = Tuner(my_kernel)
    order = race_once(tuner, serialize=%(serialize)s)
    print("ORDER", ",".join(order))
    print("WAIT_EVENTS", len(_wait_events))
    print("DONE")
"""


def run_shape(ctx, shape, mode):
    prog = (SHAPE_PRELUDE + SHAPES[shape] + SHAPE_RACE) % {"serialize": mode == "serialize"}
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
        shape = SHAPES["instance"]
        if kind == "partial":
            shape = shape.replace("types.MethodType(own_run, self)", "functools.partial(own_run, self)")
        prog = (SHAPE_PRELUDE + shape + """
    Tuner(my_kernel).run("alone")  # its first tuning: found, guarded from here
    """ + SHAPE_RACE) % {"serialize": mode == "serialize"}
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
    res = ctx.run_py(SHAPE_PRELUDE + SHAPES["instance"] + """
    inner = Tuner(my_kernel)
    outer = Autotuner(lambda *args: inner.run(*args))
    print(outer.run("x"))
    """, options=opts())
    lines = [ln for ln in res.err.splitlines() if ln.startswith("tunerguard:")]
    expect(res.rc == 0 and "ok" in res.out and len(lines) == 1 and wants["instance"] in lines[0],
           "instance, inside another tuner's call: one line", res)


CHECKS = [
    check_run_shape_guarded,
    check_run_shape_said,
    check_run_shape_instance_guarded,
]
