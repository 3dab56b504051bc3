/* Arming: from the audit hook to guarded methods.  This file is the loader's
 * part (libtunerguard.so, in every Python process); what runs once a target
 * module is there is the core's (guard/py_arm_guard.c, libtunerguard_core.so,
 * loaded then: loader/core_api.h).
 *
 *   constructor      -> PySys_AddAuditHook(audit_hook)        (before Py_Initialize)
 *   cpython.run_*    -> arm(): guard targets already imported (by site, .pth
 *                       files, sitecustomize); the meta-path finder goes in
 *                       now only with targets= (the program's own modules)
 *   "import"/"exec"  -> of a target, not armed yet (a program that embeds
 *                       Python: no cpython.run_*): arm() there, then as below
 *   "import"/"exec"  -> a target's package is being imported: the finder goes
 *                       in (first in sys.meta_path), before the target module
 *                       itself is looked for
 *   finder           -> a target module is about to execute: wrap its
 *                       loader's exec_module so we guard right after it ran
 *   "import" event   -> fallback when the finder is bypassed: the module is
 *                       pending and guarded at the next chance
 *   type's tp_new    -> a class made from a guarded one: its overrides are
 *                       guarded (a library's subclass of a built-in tuner;
 *                       guard/subclasses.c)
 *   type's tp_setattro -> a guarded method replaced on its class (seeds/001's
 *                       lock patch): the new one is guarded too
 *   the finder again -> a target module run again (importlib.reload): its new
 *                       classes are guarded as the first ones were
 *
 * This file is the audit hook, arming and the modules pending; the targets'
 * names are loader/py_arm_targets.c, the finder loader/py_arm_finder.c.  In
 * a process that imports no target, only these files' code runs: the core
 * is never loaded.  Every function here runs on a thread attached to the
 * interpreter (the GIL held, where there is one), from the audit hook, the
 * finder, a pending call or a guarded call.  None leaves an exception set.
 *
 * Threads that run at once (a free-threaded build; the audit hook runs on
 * whatever thread imports, two imports at once): arming, the target table,
 * the finder's install and the pending modules' processing are under the
 * arming lock (tg__arm_lock, core/py_lock.h: re-entrant, detached while it
 * waits; the core's guard installs take the same lock, so arming and
 * installs have one order).  What every event reads without it: armed
 * (acquire), finder_tried, the pending flags (set by a store or taken by an
 * exchange), the targets' names (tg__arm_ntargets, published by a release
 * store once an entry is filled). */
#include "loader/py_arm.h"
#include "loader/py_arm_internal.h"
#include "loader/py_arm_loader.h"
#include "core/startup.h"
#include "loader/core_api.h"
#include "core/builtin_tuners.h"
#include "core/log.h"
#include "core/options.h"
#include "core/process.h"
#include "core/py_api.h"
#include "core/py_lock.h"
#include "core/py_ref.h"
#include "core/thread_state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text the audit hook and arming read in every Python process, target
 * or not: in RELRO, not .rodata (TG_STARTUP_TEXT, loader/py_arm_loader.h).
 * Text only the target path, a report or a warning reads stays ordinary
 * literals. */
TG_STARTUP_TEXT(ev_run_prefix, "cpython.run_");
TG_STARTUP_TEXT(ev_run_module, "cpython.run_module");
TG_STARTUP_TEXT(ev_import, "import");
TG_STARTUP_TEXT(ev_exec, "exec");
TG_STARTUP_TEXT(ev_clear_hooks, "cpython._PySys_ClearAuditHooks");
TG_STARTUP_TEXT(txt_interp_main, "PyInterpreterState_Main");

int tg__arm_module_pending;
int tg_arm_pending;
struct tg_py_lock tg__arm_lock = TG_PY_LOCK_INIT;
/* Written at arming in every Python process: in .data (TG_STARTUP_DATA,
 * core/startup.h), not a .bss page of their own. */
static int armed TG_STARTUP_DATA;        /* set under tg__arm_lock, read with acquire */
static int finder_tried TG_STARTUP_DATA; /* tg__arm_install_finder was called (once): an exchange */
static void *main_interp TG_STARTUP_DATA; /* PyInterpreterState of the main interpreter, from arming */

/* The targets of module `name` (none of them found: it is not there). */
TG_STARTUP static int module_targets(const char *name)
{
    int n = 0;
    for (int i = 0; i < tg__arm_ntargets; i++)
        n += !tg__arm_targets[i].base && strcmp(tg__arm_targets[i].module, name) == 0;
    return n;
}

/* Guard every target of module `name` if its class exists now.  Returns the
 * number of targets of that module still not found.  executed: the module
 * ran to its end (else its import spec says).  A module not imported (yet)
 * is the loader's answer; one that is there loads the core, which guards
 * (no core: one line said, nothing guarded, 0). */
TG_STARTUP static int arm_module(const char *name, int executed)
{
    PyObject *mods = tg_py.PyImport_GetModuleDict();
    /* borrowed, tested only: the PyDict_GetItemStringRef of a free-threaded
     * build is a row resolved below */
    PyObject *mod = mods ? tg_py.PyDict_GetItemString(mods, name) : NULL;
    tg_py.PyErr_Clear();
    if (!mod)
        return module_targets(name);
    /* A target's module is there: the rest of the API table, before any of
     * it is called (core/py_api.h).  Missing parts: nothing to guard. */
    if (tg_py_resolve_guards() < 0)
        return 0;
    const struct tg_core_api *core = tg_core_load();
    if (!core)
        return 0;
    mod = tg_py_dict_get_str(mods, name); /* another thread may take it out meanwhile */
    if (!mod)
        return module_targets(name);
    int missing = core->arm_guard_module(name, mod, executed);
    tg_py_decref(mod);
    return missing;
}

TG_STARTUP static void arm_loaded_modules(void)
{
    for (int i = 0; i < tg__arm_ntargets; i++)
        if (!tg__arm_targets[i].base)
            arm_module(tg__arm_targets[i].module, 0);
}
/* ---- pending modules ---------------------------------------------------------------- */

/* A target module was announced by an "import" event: for this many later
 * events it stays pending while it is not in sys.modules yet.  Our finder
 * guards it as it runs; but a finder before ours (a program's import hook,
 * sys.meta_path restored from a copy without ours) loads it unseen, and
 * then the next events find it there.  A bound, so that a target whose
 * import failed costs nothing for good.  Only the targets of an announced
 * module wait so: a target whose module nothing announced (torch's, in a
 * program that runs Triton alone) keeps nothing pending, and every guarded
 * call and audit event after the announced module is guarded skips the
 * pending check again. */
#define TG_IMPORT_WAIT_EVENTS 4096
static int import_wait;                         /* relaxed atomics */
static unsigned char announced[TG_MAX_TARGETS]; /* per target: its module was announced (relaxed atomics) */

/* Guard at the next chance: both flags set, the module's first (a thread
 * that takes tg_arm_pending then finds tg__arm_module_pending). */
TG_STARTUP static void set_pending(void)
{
    __atomic_store_n(&tg__arm_module_pending, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&tg_arm_pending, 1, __ATOMIC_RELEASE);
}

/* An "import" event named module `name`, a target's: its targets pending.
 * Any thread, without the lock. */
TG_STARTUP static void announce(const char *name)
{
    for (int i = 0, n = __atomic_load_n(&tg__arm_ntargets, __ATOMIC_ACQUIRE); i < n; i++)
        if (strcmp(tg__arm_targets[i].module, name) == 0)
            __atomic_store_n(&announced[i], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&import_wait, TG_IMPORT_WAIT_EVENTS, __ATOMIC_RELAXED);
    set_pending();
}

/* tg_arm_process_pending's work: tg__arm_lock held. */
TG_STARTUP static void process_pending_locked(void)
{
    __atomic_store_n(&tg_arm_pending, 0, __ATOMIC_RELAXED);
    if (!__atomic_exchange_n(&tg__arm_module_pending, 0, __ATOMIC_ACQ_REL))
        return; /* an announcement after the exchange sets both again */
    int still = 0;
    const int wait = __atomic_load_n(&import_wait, __ATOMIC_RELAXED);
    for (int i = 0; i < tg__arm_ntargets; i++)
        if (!tg__arm_targets[i].base && arm_module(tg__arm_targets[i].module, 0) > 0) {
            PyObject *mods = tg_py.PyImport_GetModuleDict();
            if (mods && tg_py.PyDict_GetItemString(mods, tg__arm_targets[i].module))
                still = 1; /* importing now: the class is not defined yet */
            else if (wait > 0 && __atomic_load_n(&announced[i], __ATOMIC_RELAXED))
                still = 1; /* announced, not there yet: a finder before ours may load it */
        }
    if (wait > 0 && __atomic_sub_fetch(&import_wait, 1, __ATOMIC_RELAXED) == 0)
        for (int i = 0; i < TG_MAX_TARGETS; i++)
            __atomic_store_n(&announced[i], 0, __ATOMIC_RELAXED);
    if (still)
        set_pending();
}

TG_STARTUP void tg_arm_process_pending(void)
{
    struct tg_thread *t = tg__self_busy();
    if (t->busy)
        return;
    /* Finalizing: sys.modules may be gone (PyImport_GetModuleDict is fatal
     * then); nothing imported now needs guarding. */
    int (*fin)(void) = tg_py.Py_IsFinalizing ? tg_py.Py_IsFinalizing : tg_py._Py_IsFinalizing;
    if (fin && fin()) {
        __atomic_store_n(&tg_arm_pending, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&tg__arm_module_pending, 0, __ATOMIC_RELAXED);
        return;
    }
    /* A thread already at it does it for this one too (what is announced
     * after its exchange is pending again): the others go on, never wait. */
    if (!tg_py_trylock(&tg__arm_lock))
        return;
    t->busy++;
    process_pending_locked();
    tg_py.PyErr_Clear();
    t->busy--;
    tg_py_unlock(&tg__arm_lock);
}
/* ---- when the finder goes in ------------------------------------------------------------ */

/* Until a target's package is imported, sys.meta_path is left as it was:
 * the finder goes in when the import system is about to look for a target
 * module or a package above one.  Every such import reaches the hook first:
 * an import statement (or __import__) raises "import" with the module's
 * name before the finders are asked; importlib.import_module raises none,
 * but a package's __init__ raises "exec" as it starts to run, before any
 * module under it is looked for.  That holds for the built-in targets'
 * packages (triton, torch).  A program's own targets (targets=) may be
 * top-level modules or sit in namespace packages, which nothing announces
 * before they run: with targets= the finder goes in at arming. */
/* The finder goes in, once.  A target module may be running already (its
 * package imported through importlib, the finder asked before it was
 * there): pending, so that it is guarded once it has run. */
TG_STARTUP static void need_finder(void)
{
    if (__atomic_load_n(&finder_tried, __ATOMIC_RELAXED) || __atomic_exchange_n(&finder_tried, 1, __ATOMIC_ACQ_REL))
        return;
    tg_py_lock(&tg__arm_lock); /* sys.meta_path changed by one thread at a time */
    tg__arm_install_finder();
    tg_py_unlock(&tg__arm_lock);
    set_pending();
}

/* ---- the audit hook ---------------------------------------------------------------------- */

/* tg__arm_lock held; armed was 0. */
TG_STARTUP static void arm(void)
{
    __atomic_store_n(&armed, 1, __ATOMIC_RELEASE); /* once, whatever follows */
    /* cpython.run_* is raised by the main interpreter only (Modules/main.c).
     * Kept to tell a subinterpreter's events apart without calling
     * PyInterpreterState_Main on each event (see tg_py_decref on why). */
    if (tg_py.PyInterpreterState_Get)
        main_interp = tg_py.PyInterpreterState_Get();
    if (tg_py_resolve() < 0)
        return;
    /* Relative report paths: the directory the program started in.  The
     * rest of the report set-up (tg_activate) waits for the core. */
    tg_proc_setup();
    tg_proc_arm();
    if (tg_core_needed_at_start())
        tg_activate();
    struct tg_thread *t = tg__self_busy();
    t->busy++;
    tg__arm_parse_targets(1);
    if ((tg__arm_user_target() || tg__arm_target_package_present()) &&
        !__atomic_exchange_n(&finder_tried, 1, __ATOMIC_ACQ_REL))
        tg__arm_install_finder();
    arm_loaded_modules();
    tg_core_cupti_maybe_start(1); /* cupti=1 and libcuda already loaded (else at a later event) */
    t->busy--;
}

/* An interpreter tunerguard does not serve (older than 3.9, newer than 3.15,
 * a free-threaded build other than 3.13t and 3.14t):
 * no finder, nothing guarded; one line when a target module is imported,
 * where the program would have been guarded.  The "import" event has the
 * module's name in args[0] on every version with audit hooks (3.8+). */
TG_STARTUP static void parse_targets_quietly(void)
{
    tg__arm_parse_targets(0);
}

TG_STARTUP static void unsupported_event(const char *event, PyObject *args)
{
    static unsigned said;
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* free-threaded: imports run in parallel */
    if (__atomic_load_n(&said, __ATOMIC_RELAXED) || strcmp(event, ev_import) != 0)
        return; /* said already: nothing more to look up */
    if (tg_py_resolve_unsupported() < 0)
        return;
    pthread_once(&once, parse_targets_quietly);
    const char *name = tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(args, 0));
    tg_py.PyErr_Clear();
    if (!name || !tg__arm_is_target_module(name))
        return;
    char why[96];
    if (tg_py.free_threaded && tg_py.minor > TG_PY_FT_MINOR_LAST)
        snprintf(why, sizeof why, "a free-threaded build newer than 3.%dt, the newest free-threaded one tunerguard serves",
                 TG_PY_FT_MINOR_LAST);
    else if (tg_py.free_threaded)
        snprintf(why, sizeof why, "a free-threaded build older than 3.%dt, which tunerguard does not serve",
                 TG_PY_FT_MINOR_FIRST);
    else if (tg_py.minor > TG_PY_MINOR_LAST)
        snprintf(why, sizeof why, "newer than 3.%d, the newest tunerguard serves", TG_PY_MINOR_LAST);
    else
        snprintf(why, sizeof why, "older than 3.%d, which tunerguard does not serve", TG_PY_MINOR_FIRST);
    tg__say_capped(&said, 1, 0, "%s imported, but this Python (%s) is %s: its tuners run unguarded", name,
                   tg_py.version, why);
}

/* A program that embeds Python (Py_Initialize, then PyRun_SimpleString,
 * PyRun_SimpleFile or PyImport_ImportModule; a pybind11 host) never reaches
 * Python's main, which alone raises cpython.run_*.  There arming waits for
 * the first event that concerns a target once the interpreter is
 * initialized: an "import" of a target module or a package above one, or an
 * "exec" while a target's package is in sys.modules (importlib.import_module
 * raises no "import"; the package's __init__ raises "exec").  In the main
 * interpreter only (a subinterpreter's events are not ours to arm on).  In
 * python itself the same holds between initialization and cpython.run_*
 * (a .pth file importing a target): arming there is arming earlier, with
 * the target in sight.  Costs, per event until armed, a call to
 * Py_IsInitialized and a few string compares ("exec": a look-up of each
 * target's package).  tg__arm_lock held. */
TG_STARTUP static int target_import_unarmed(const char *event, PyObject *args)
{
    int import = strcmp(event, ev_import) == 0;
    if ((!import && strcmp(event, ev_exec) != 0) || tg_py_resolve() < 0 || !tg_py.Py_IsInitialized())
        return 0;
    tg__arm_parse_targets(1);
    int concerns;
    if (import) {
        const char *name = tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(args, 0));
        concerns = name && tg__arm_names_target_or_package(name);
        tg_py.PyErr_Clear();
    } else {
        concerns = tg__arm_target_package_present();
    }
    if (!concerns)
        return 0;
    static void *(*interp_main)(void) TG_STARTUP_DATA;
    static int looked TG_STARTUP_DATA;
    if (!looked++)
        interp_main = (void *(*)(void))tg_py_symbol(txt_interp_main);
    return !interp_main || !tg_py.PyInterpreterState_Get || tg_py.PyInterpreterState_Get() == interp_main();
}

/* The audit hook before arming: arm once the interpreter is about to run
 * user code (cpython.run_*), or, with no cpython.run_* (an embedding
 * program), at the target's own import.  Under tg__arm_lock: two threads
 * importing at once arm once, and the second finds it done.  Returns 1
 * when the hook goes on with this event as an armed hook does. */
TG_STARTUP static int arm_at_event(const char *event, PyObject *args)
{
    int go_on = 0;
    tg_py_lock(&tg__arm_lock);
    if (__atomic_load_n(&armed, __ATOMIC_RELAXED)) {
        go_on = 1; /* armed by another thread meanwhile */
    } else if (strncmp(event, ev_run_prefix, sizeof ev_run_prefix - 1) == 0 && tg_py_resolve() == 0 &&
               tg_py.Py_IsInitialized()) {
        arm();
        if (strcmp(event, ev_run_module) == 0)
            tg__arm_say_run_as_main(args);
    } else if (target_import_unarmed(event, args)) {
        arm();
        go_on = 1;
    }
    tg_py_unlock(&tg__arm_lock);
    return go_on;
}

TG_STARTUP static int audit_hook(const char *event, PyObject *args, void *data)
{
    (void)data;
    if (event[0] != 'c' && event[0] != 'i' && (event[0] != 'e' || __atomic_load_n(&finder_tried, __ATOMIC_RELAXED)) &&
        !__atomic_load_n(&tg_arm_pending, __ATOMIC_RELAXED))
        return 0; /* "exec": only until the finder is in; any event while a module is pending */
    if (!tg_py.supported) {
        unsupported_event(event, args);
        return 0;
    }
    struct tg_thread *t = tg__self_busy();
    if (t->busy)
        return 0;
    if (!__atomic_load_n(&armed, __ATOMIC_ACQUIRE) && !arm_at_event(event, args))
        return 0;
    /* The hook fires in every interpreter; guards, targets and the finder
     * belong to the main one.  A subinterpreter is left alone (its objects
     * must not become our targets), with one line once per process. */
    if (main_interp && tg_py.PyInterpreterState_Get() != main_interp) {
        static unsigned said;
        const char *name = event[0] == 'i' && strcmp(event, ev_import) == 0
                               ? tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(args, 0)) : NULL;
        if (name && tg__arm_is_target_module(name))
            tg__say_capped(&said, 1, 0, "%s imported in a subinterpreter: subinterpreters are not supported, their "
                           "tuner calls run unguarded (the main interpreter stays guarded)", name);
        tg_py.PyErr_Clear();
        return 0;
    }
    if (strcmp(event, ev_import) == 0) {
        const char *name = tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(args, 0));
        if (name && !__atomic_load_n(&finder_tried, __ATOMIC_RELAXED) && tg__arm_names_target_or_package(name))
            need_finder();
        if (name && tg__arm_is_target_module(name))
            announce(name);
        tg_py.PyErr_Clear();
    } else if (event[0] == 'e') {
        if (!__atomic_load_n(&finder_tried, __ATOMIC_RELAXED) && strcmp(event, ev_exec) == 0 &&
            tg__arm_target_package_present())
            need_finder();
    } else if (strcmp(event, ev_clear_hooks) == 0) {
        const struct tg_core_api *core = tg_core_loaded();
        if (core) /* else nothing was guarded, reported, traced or serialized */
            core->arm_finalizing();
        return 0;
    }
    if (tg_opts.cupti)
        tg_core_cupti_maybe_start(0); /* once libcuda was seen; one load after that */
    if (__atomic_load_n(&tg_arm_pending, __ATOMIC_RELAXED))
        tg_arm_process_pending();
    return 0;
}

TG_STARTUP void tg_arm_exit_summary(void)
{
    const struct tg_core_api *core = tg_core_loaded();
    if (core) /* else nothing was reported, traced or serialized */
        core->arm_exit_summary();
}

/* The audit hook's list entry is allocated now, before Py_Initialize, with
 * the raw allocator of the moment (malloc), and freed at finalization with
 * the one Python configured meanwhile.  Where that one has the debug hooks
 * (PYTHONMALLOC=debug and the *_debug ones, -X dev, PYTHONDEVMODE), the free
 * found no debug header and Python aborted at exit: every process, target
 * or not.  So, where argv and the environment say the debug hooks are
 * coming, the entry is allocated under them (PyMem_SetupDebugHooks, then the
 * allocators put back as they were); the debug free then finds the block
 * its own.  As Python's pre-configuration decides: PYTHONMALLOC unless -E or
 * -I, else dev mode.  A debug build with PYTHONMALLOC=malloc (the reverse)
 * is not handled. */
static const struct {
    char malloc_env[sizeof "PYTHONMALLOC"], devmode_env[sizeof "PYTHONDEVMODE"], dev[sizeof "dev"], debug[sizeof "debug"];
    char get[sizeof "PyMem_GetAllocator"], set[sizeof "PyMem_SetAllocator"], hooks[sizeof "PyMem_SetupDebugHooks"];
} mem_names TG_STARTUP_RODATA = {"PYTHONMALLOC", "PYTHONDEVMODE", "dev", "debug", "PyMem_GetAllocator", "PyMem_SetAllocator",
                                 "PyMem_SetupDebugHooks"};

/* PYTHONMALLOC=debug, malloc_debug, pymalloc_debug, mimalloc_debug */
TG_STARTUP static int ends_in_debug(const char *s)
{
    size_t n = strlen(s), k = sizeof mem_names.debug - 1;
    return n >= k && strcmp(s + n - k, mem_names.debug) == 0;
}

/* 1: Python will run with the debug hooks on its allocators (argv and the
 * environment say so), 0: it will not, or they do not say. */
TG_STARTUP static int debug_hooks_coming(int argc, char **argv)
{
    int ignore_env = 0, dev = 0;
    for (int i = 1; argv && i < argc && argv[i]; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1] || (a[1] == '-' && !a[2]))
            break; /* the script, "-" (stdin) or "--": options end */
        if (a[1] == '-')
            continue; /* --help, --version, --check-hash-based-pycs VALUE (close enough) */
        for (const char *p = a + 1; *p; p++) {
            if (*p == 'E' || *p == 'I') {
                ignore_env = 1;
            } else if (*p == 'X' || *p == 'W' || *p == 'c' || *p == 'm') {
                const char *val = p[1] ? p + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (*p == 'X' && val && strcmp(val, mem_names.dev) == 0)
                    dev = 1;
                if (*p == 'c' || *p == 'm')
                    goto done; /* the rest is the program's */
                break;
            }
        }
    }
done:;
    const char *pm = ignore_env ? NULL : getenv(mem_names.malloc_env);
    if (pm && *pm)
        return ends_in_debug(pm);
    const char *dm = ignore_env ? NULL : getenv(mem_names.devmode_env);
    return dev || (dm && *dm);
}

struct tg_mem_allocator { /* PyMemAllocatorEx, the same since 3.5 */
    void *ctx;
    void *(*malloc)(void *, size_t);
    void *(*calloc)(void *, size_t, size_t);
    void *(*realloc)(void *, void *, size_t);
    void (*free)(void *, void *);
};

TG_STARTUP void tg_arm_init(int argc, char **argv)
{
    if (tg_py_resolve_hook() < 0)
        return;
    void (*get)(int, struct tg_mem_allocator *) = NULL;
    void (*set)(int, struct tg_mem_allocator *) = NULL;
    void (*hooks)(void) = NULL;
    if (debug_hooks_coming(argc, argv)) {
        get = (void (*)(int, struct tg_mem_allocator *))tg_py_symbol(mem_names.get);
        set = (void (*)(int, struct tg_mem_allocator *))tg_py_symbol(mem_names.set);
        hooks = (void (*)(void))tg_py_symbol(mem_names.hooks);
    }
    struct tg_mem_allocator saved[3]; /* PYMEM_DOMAIN_RAW, _MEM, _OBJ */
    if (get && set && hooks) {
        for (int d = 0; d < 3; d++)
            get(d, &saved[d]);
        hooks(); /* no-op where they are on already (a debug build) */
    }
    /* Legal before Py_Initialize, on 3.9 to 3.13, shared or static. */
    tg_py.PySys_AddAuditHook(audit_hook, NULL);
    if (get && set && hooks)
        for (int d = 0; d < 3; d++)
            set(d, &saved[d]);
}

