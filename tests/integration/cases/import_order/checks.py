"""Integration checks, group import_order: each check runs its program (a file
beside this one, or a string built here) and states what must hold."""
import json

from harness import expect, jsonl_lines, no_files, only_report, opts, read_program


def program(name, **params):
    return read_program(__file__, name, **params)


# --------------------------------------------------------------------------
# (d) import order and subclasses

def check_import_lazy_in_thread(ctx):
    res = ctx.run_py(program('import_lazy_in_thread'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1 and "my_kernel" in text, "race reported", res)


def check_import_importlib(ctx):
    res = ctx.run_py(program('import_importlib'), options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1, "race reported", res)


def check_import_module_run_again(ctx):
    """The target module runs again (importlib.reload; deleted from
    sys.modules and imported anew): its new Autotuner class, a subclass of
    it defined after, and the class of the first import are all guarded, and
    a race on the new class is reported."""
    for how in ("importlib.reload(A)", "(sys.modules.pop('triton.runtime.autotuner'), "
                "importlib.import_module('triton.runtime.autotuner'))[1]"):
        res = ctx.run_py(program("import_module_run_again", how=how), options=opts())
        expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
        expect("GUARDED True True True" in res.out, "old class, new class and its subclass guarded", res)
        _, text = only_report(res)
        expect(text.count("WARNING: tunerguard") == 1, "the race on the new class reported", res)


def check_import_namespace_package(ctx):
    """The target module in namespace packages (no __init__.py), imported
    through importlib.import_module: no "import" event, no package code
    runs before the target's own, so the finder comes too late for it; it
    is guarded at the first audit event of any kind after it has run (here
    an open()), and the race after that is reported."""
    res = ctx.run_py(program('import_namespace_package'), options=opts())
    expect(res.rc == 0 and "GUARDED True" in res.out and "NamespaceLoader" in res.out, "guarded", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1, "the race reported", res)


def check_import_finder_before_ours(ctx):
    """A finder of the program's put before ours that loads the target
    module itself (an import hook), and sys.meta_path put back from a copy
    taken before ours went in (a test harness): the "import" event
    announced the module, so it is guarded at the first audit event after
    it has run, and its race is reported."""
    for how in ("front", "snapshot"):
        res = ctx.run_py(program("import_finder_before_ours", how=repr(how)), options=opts())
        expect(res.rc == 0 and "GUARDED True" in res.out, "%s: guarded" % how, res)
        _, text = only_report(res)
        expect(text.count("WARNING: tunerguard") == 1, "%s: the race reported" % how, res)


def check_import_leaves_loader_as_it_was(ctx):
    """The finder wraps the target module's loader.exec_module for that one
    import and puts it back as the module starts to run: nothing of ours
    stays on the loader (a shared zipimporter, a class used as a loader
    with its classmethod, would keep it for every later import)."""
    res = ctx.run_py(program('import_leaves_loader_as_it_was'), options=opts())
    expect(res.rc == 0 and "OWN False" in res.out and "GUARDED True" in res.out,
           "the loader as it was, the module guarded", res)


SUB_PROG = program('sub_tuner')


def check_subclass_race(ctx):
    res = ctx.run_py(SUB_PROG + program("subclass_race"), options=opts())
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    _, text = only_report(res)
    expect(text.count("WARNING: tunerguard") == 1, "one race reported", res)
    expect("CachedAutotuner.run" in text, "the report's method is the subclass's run", res)
    o = jsonl_lines(res)[0]
    expect("CachedAutotuner.run" in json.dumps(o), "json method", res)


def check_subclass_nested_single_thread(ctx):
    res = ctx.run_py(SUB_PROG + program("subclass_nested_single_thread"), options=opts(verbosity=1))
    expect(res.rc == 0 and "DONE" in res.out, "program ran", res)
    expect(res.err == "", "run -> super().run() on one thread is not a race", res)
    no_files(res)


CHECKS = [
    check_import_lazy_in_thread,
    check_import_importlib,
    check_import_module_run_again,
    check_import_namespace_package,
    check_import_finder_before_ours,
    check_import_leaves_loader_as_it_was,
    check_subclass_race,
    check_subclass_nested_single_thread,
]
