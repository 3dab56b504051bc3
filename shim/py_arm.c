/* Arming: from the audit hook to guarded methods.
 *
 *   constructor      -> PySys_AddAuditHook(audit_hook)        (before Py_Initialize)
 *   cpython.run_*    -> arm(): install the meta-path finder, guard targets
 *                       already imported (by site, .pth files, sitecustomize)
 *   finder           -> a target module is about to execute: wrap its
 *                       loader's exec_module so we guard right after it ran
 *   "import" event   -> fallback when the finder is bypassed: the module is
 *                       pending and guarded at the next chance
 *   __init_subclass__ on each guarded base -> guard overrides in subclasses
 *                       defined later (flash-linear-attention's CachedAutotuner)
 *   a guarded call that finds its class attribute replaced (seeds/001's lock
 *                       patch) guards the new one too (shim/guard_install.c)
 *
 * Every function here runs with the GIL held, from the audit hook, the
 * finder, a pending call or a guarded call.  None leaves an exception set. */
#include "shim/py_arm.h"
#include "core/startup.h"
#include "reports/emit.h"
#include "reports/native_stack.h"
#include "reports/report.h"
#include "shim/cuda_stress.h"
#include "shim/cupti_backend.h"
#include "shim/lifecycle.h"
#include "core/log.h"
#include "core/options.h"
#include "core/process.h"
#include "core/py_api.h"
#include "shim/py_guard.h"
#include "core/thread_state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text that arming, the audit hook and the finder's negative answer
 * read in every Python process, target or not: in RELRO, not .rodata
 * (TG_STARTUP_RODATA, core/startup.h).  Text only the target path, a
 * report or a warning reads stays ordinary literals. */
#define TG_STARTUP_TEXT(var, text) static const char var[] TG_STARTUP_RODATA = text
TG_STARTUP_TEXT(ev_run_prefix, "cpython.run_");
TG_STARTUP_TEXT(ev_import, "import");
TG_STARTUP_TEXT(ev_clear_hooks, "cpython._PySys_ClearAuditHooks");
TG_STARTUP_TEXT(txt_sys, "sys");
TG_STARTUP_TEXT(txt_meta_path, "meta_path");
TG_STARTUP_TEXT(txt_find_spec, "find_spec");
TG_STARTUP_TEXT(txt_invalidate_caches, "invalidate_caches");
TG_STARTUP_TEXT(txt_finder_name, "tunerguard.Finder");
TG_STARTUP_TEXT(txt_finder_doc, "tunerguard's import finder (LD_PRELOAD=libtunerguard.so): guards tuner classes as their "
                                "modules are imported; finds nothing itself.");

/* Built-in targets; targets= adds to them. */
static const char builtin_targets[][64] TG_STARTUP_RODATA = {
    "triton.runtime.autotuner:Autotuner.run",
    "triton.runtime.autotuner:Autotuner.warmup",
    "torch._inductor.runtime.triton_heuristics:CachingAutotuner.run",
};

#define TG_MAX_TARGETS 64
struct target {
    char module[128];
    char cls[96];      /* qualname inside the module, may be dotted */
    char method[48];
    PyObject *base;    /* the class once found (strong reference) */
    int user;          /* from targets= (not built in): a target that guards
                          nothing is the user's mistake, said once */
    int said;
};
static struct target targets[TG_MAX_TARGETS];
static int ntargets;

/* Guarded base classes, each with its __init_subclass__ hook. */
#define TG_MAX_BASES 32
struct base {
    PyObject *cls;
    PyObject *orig_init_subclass; /* cls.__dict__['__init_subclass__'] or NULL */
    PyMethodDef def;
};
static struct base bases[TG_MAX_BASES];
static int nbases;

volatile int tg_arm_pending;
static int armed;
static void *main_interp; /* PyInterpreterState of the main interpreter, from arming */
static int module_pending; /* an "import" event named a target module */
static int summary_done;

/* ---- targets ---------------------------------------------------------------- */

/* snprintf(dst, size, "%s", src) without snprintf (a libc function, and its
 * format a .rodata literal, in a process that imports no target). */
TG_STARTUP static void copy_cut(char *dst, size_t size, const char *src)
{
    size_t n = 0;
    while (src[n] && n + 1 < size) {
        dst[n] = src[n];
        n++;
    }
    dst[n] = '\0';
}

TG_STARTUP static void add_target(const char *spec, size_t len, int user, int say)
{
    if (ntargets == TG_MAX_TARGETS)
        return;
    char buf[300];
    if (len >= sizeof buf)
        return;
    memcpy(buf, spec, len);
    buf[len] = '\0';
    char *colon = strchr(buf, ':');
    char *dot = colon ? strrchr(colon, '.') : NULL;
    if (!colon || !dot) /* the option parser already refused such input */
        return;
    *colon = '\0';
    *dot = '\0';
    struct target *t = &targets[ntargets++];
    copy_cut(t->module, sizeof t->module, buf);
    copy_cut(t->cls, sizeof t->cls, colon + 1);
    copy_cut(t->method, sizeof t->method, dot + 1);
    t->user = user;
    if (say && user && strcmp(t->module, "__main__") == 0) {
        /* arming runs before the script does, and the script is never
         * imported after: its classes are not seen */
        tg__warn("targets=%s:%s.%s: classes of the script itself (__main__) cannot be guarded; define %s in "
                 "a module and name that module", t->module, t->cls, t->method, t->cls);
        t->said = 1;
    }
}

/* say: warn about targets that can never be guarded (not where tunerguard
 * does not serve the interpreter: one line says that). */
TG_STARTUP static void parse_targets(int say)
{
    if (ntargets)
        return;
    for (size_t i = 0; i < sizeof builtin_targets / sizeof builtin_targets[0]; i++)
        add_target(builtin_targets[i], strlen(builtin_targets[i]), 0, say);
    const char *p = tg_opts.targets;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        add_target(p, len, 1, say);
        p = end ? end + 1 : p + len;
    }
}

TG_STARTUP static int is_target_module(const char *name)
{
    for (int i = 0; i < ntargets; i++)
        if (strcmp(targets[i].module, name) == 0)
            return 1;
    return 0;
}

/* getattr along a dotted qualname; new reference or NULL. */
static PyObject *get_dotted(PyObject *obj, const char *qual)
{
    char part[96];
    PyObject *cur = obj;
    tg_py.Py_IncRef(cur);
    while (*qual) {
        const char *dot = strchr(qual, '.');
        size_t n = dot ? (size_t)(dot - qual) : strlen(qual);
        if (n >= sizeof part)
            n = sizeof part - 1;
        memcpy(part, qual, n);
        part[n] = '\0';
        PyObject *next = tg_py.PyObject_GetAttrString(cur, part);
        tg_py.Py_DecRef(cur);
        if (!next) {
            tg_py.PyErr_Clear();
            return NULL;
        }
        cur = next;
        qual = dot ? dot + 1 : qual + n;
    }
    return cur;
}

/* ---- subclasses --------------------------------------------------------------- */

static void guard_family_methods(PyObject *cls, PyObject *base, const char *why);

/* Base.__init_subclass__(cls, **kwargs): guard cls's overrides, then chain to
 * what the base had (its own __init_subclass__ or its parent's). */
static PyObject *init_subclass_hook(PyObject *capsule, PyObject *args, PyObject *kwargs)
{
    struct base *b = tg_py.PyCapsule_GetPointer(capsule, NULL);
    if (!b)
        return NULL;
    PyObject *cls = tg_py.PyTuple_Size(args) > 0 ? tg_py.PyTuple_GetItem(args, 0) : NULL;
    if (!cls)
        return NULL;
    struct tg_thread *t = tg__self();
    if (!t->busy) {
        t->busy++;
        guard_family_methods(cls, b->cls, "subclass defined");
        t->busy--;
    }
    PyObject *chained = NULL;
    if (b->orig_init_subclass) {
        PyObject *bound = tg_py.PyObject_CallMethod(b->orig_init_subclass, "__get__", "OO", tg_py.none, cls);
        if (!bound)
            return NULL;
        PyObject *empty = tg_py.PyTuple_Pack(0);
        chained = tg_py.PyObject_Call(bound, empty, kwargs);
        tg_py.Py_DecRef(empty);
        tg_py.Py_DecRef(bound);
    } else {
        PyObject *builtins = tg_py.PyImport_ImportModule("builtins");
        PyObject *super_type = builtins ? tg_py.PyObject_GetAttrString(builtins, "super") : NULL;
        PyObject *sup = super_type ? tg_py.PyObject_CallFunctionObjArgs(super_type, b->cls, cls, NULL) : NULL;
        PyObject *meth = sup ? tg_py.PyObject_GetAttrString(sup, "__init_subclass__") : NULL;
        if (meth) {
            PyObject *empty = tg_py.PyTuple_Pack(0);
            chained = tg_py.PyObject_Call(meth, empty, kwargs);
            tg_py.Py_DecRef(empty);
        }
        if (meth)
            tg_py.Py_DecRef(meth);
        if (sup)
            tg_py.Py_DecRef(sup);
        if (super_type)
            tg_py.Py_DecRef(super_type);
        if (builtins)
            tg_py.Py_DecRef(builtins);
    }
    return chained;
}

static void hook_subclasses(PyObject *base)
{
    for (int i = 0; i < nbases; i++)
        if (bases[i].cls == base)
            return;
    if (nbases == TG_MAX_BASES)
        return;
    struct base *b = &bases[nbases];
    memset(b, 0, sizeof *b);
    b->cls = base;
    tg_py.Py_IncRef(base);
    PyObject *dict = tg_py.PyObject_GetAttrString(base, "__dict__");
    PyObject *key = tg_py.PyUnicode_FromString("__init_subclass__");
    b->orig_init_subclass = (dict && key) ? tg_py.PyObject_GetItem(dict, key) : NULL;
    tg_py.PyErr_Clear();
    if (dict)
        tg_py.Py_DecRef(dict);
    if (key)
        tg_py.Py_DecRef(key);
    b->def.ml_name = "__init_subclass__";
    b->def.ml_meth = (void *)init_subclass_hook;
    b->def.ml_flags = TG_METH_VARARGS | TG_METH_KEYWORDS;
    PyObject *cap = tg_py.PyCapsule_New(b, NULL, NULL);
    PyObject *fn = cap ? tg_py.PyCFunction_NewEx(&b->def, cap, NULL) : NULL;
    PyObject *cm = fn ? tg_py.PyClassMethod_New(fn) : NULL;
    if (cm && tg_py.PyObject_SetAttrString(base, "__init_subclass__", cm) == 0) {
        nbases++;
    } else {
        tg_py.PyErr_Clear();
        tg__warn("cannot watch subclasses of a guarded class; overrides defined later run unguarded");
        tg_py.Py_DecRef(base);
    }
    if (cm)
        tg_py.Py_DecRef(cm);
    if (fn)
        tg_py.Py_DecRef(fn);
    if (cap)
        tg_py.Py_DecRef(cap);
}

/* Guard, on cls, every target method whose target class is `base`. */
static void guard_family_methods(PyObject *cls, PyObject *base, const char *why)
{
    for (int i = 0; i < ntargets; i++)
        if (targets[i].base == base)
            tg_guard_install(cls, targets[i].method, why);
}

/* Guard the overrides in every subclass that already exists. */
static void guard_existing_subclasses(PyObject *cls, PyObject *base, int depth)
{
    if (depth > 32)
        return;
    PyObject *subs = tg_py.PyObject_CallMethod(cls, "__subclasses__", NULL);
    if (!subs) {
        tg_py.PyErr_Clear();
        return;
    }
    Py_ssize_t n = tg_py.PyList_Size(subs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *sub = tg_py.PyList_GetItem(subs, i); /* borrowed */
        guard_family_methods(sub, base, "existing subclass");
        guard_existing_subclasses(sub, base, depth + 1);
    }
    tg_py.Py_DecRef(subs);
    tg_py.PyErr_Clear();
}

/* ---- modules ---------------------------------------------------------------------- */

/* Has module mod finished running?  An import in progress marks its spec
 * with _initializing = True (importlib._bootstrap); a class named in
 * targets= may be defined further down. */
TG_STARTUP static int module_executed(PyObject *mod)
{
    /* __main__ (spec None when run as a script) is running from before
     * arming to the end: its classes may come later. */
    PyObject *mname = tg_py.PyObject_GetAttrString(mod, "__name__");
    const char *mn = mname ? tg_py.PyUnicode_AsUTF8(mname) : NULL;
    int is_main = mn && strcmp(mn, "__main__") == 0;
    if (mname)
        tg_py.Py_DecRef(mname);
    tg_py.PyErr_Clear();
    if (is_main)
        return 0;
    PyObject *spec = tg_py.PyObject_GetAttrString(mod, "__spec__");
    PyObject *init = spec && spec != tg_py.none ? tg_py.PyObject_GetAttrString(spec, "_initializing") : NULL;
    tg_py.PyErr_Clear();
    PyObject *str = init ? tg_py.PyObject_Str(init) : NULL;
    const char *v = str ? tg_py.PyUnicode_AsUTF8(str) : NULL;
    int executing = v && strcmp(v, "True") == 0;
    tg_py.PyErr_Clear();
    PyObject *objs[] = {str, init, spec};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
        if (objs[i])
            tg_py.Py_DecRef(objs[i]);
    return !executing;
}

/* A user target (targets=) that guards nothing: one line, once, saying why.
 * cls: the class found, or NULL when the module has no such class. */
static void say_unguarded(struct target *t, PyObject *cls)
{
    if (!t->user || t->said)
        return;
    PyObject *dict = cls ? tg_py.PyObject_GetAttrString(cls, "__dict__") : NULL;
    PyObject *key = dict ? tg_py.PyUnicode_FromString(t->method) : NULL;
    PyObject *own = key ? tg_py.PyObject_GetItem(dict, key) : NULL;
    if (key)
        tg_py.Py_DecRef(key);
    tg_py.PyErr_Clear();
    if (own && tg_guard_is_ours(own)) {
        tg_py.Py_DecRef(own);
        if (dict)
            tg_py.Py_DecRef(dict);
        return; /* guarded */
    }
    t->said = 1;
    if (!cls) {
        tg__warn("targets=%s:%s.%s: module %s has no class %s; nothing guarded", t->module, t->cls, t->method,
                 t->module, t->cls);
    } else if (!own) {
        PyObject *inherited = tg_py.PyObject_GetAttrString(cls, t->method);
        tg_py.PyErr_Clear();
        if (inherited && tg_guard_is_ours(inherited)) /* a base guarded by another target */
            t->said = 0;
        else if (inherited)
            tg__warn("targets=%s:%s.%s: %s does not define %s itself (it inherits it): name the class that "
                     "defines it; nothing guarded", t->module, t->cls, t->method, t->cls, t->method);
        else
            tg__warn("targets=%s:%s.%s: class %s has no method %s; nothing guarded", t->module, t->cls, t->method,
                     t->cls, t->method);
        if (inherited)
            tg_py.Py_DecRef(inherited);
    } else {
        PyObject *type = tg_py.PyObject_Type(own);
        PyObject *tn = type ? tg_py.PyObject_GetAttrString(type, "__name__") : NULL;
        const char *tname = tn ? tg_py.PyUnicode_AsUTF8(tn) : NULL;
        tg__warn("targets=%s:%s.%s: %s.%s is a %s, not a plain function (an instance method); nothing guarded",
                 t->module, t->cls, t->method, t->cls, t->method, tname ? tname : "?");
        tg_py.PyErr_Clear();
        if (tn)
            tg_py.Py_DecRef(tn);
        if (type)
            tg_py.Py_DecRef(type);
    }
    if (own)
        tg_py.Py_DecRef(own);
    if (dict)
        tg_py.Py_DecRef(dict);
}

/* Guard every target of module `name` if its class exists now.  Returns the
 * number of targets of that module still not found.  executed: the module
 * ran to its end (else its import spec says). */
TG_STARTUP static int arm_module(const char *name, int executed)
{
    int missing = 0;
    PyObject *mods = tg_py.PyImport_GetModuleDict();
    PyObject *mod = mods ? tg_py.PyDict_GetItemString(mods, name) : NULL; /* borrowed */
    /* A target's module is there: the rest of the API table, before any of
     * it is called (core/py_api.h).  Missing parts: nothing to guard. */
    if (mod && tg_py_resolve_guards() < 0)
        return 0;
    for (int i = 0; i < ntargets; i++) {
        struct target *t = &targets[i];
        if (strcmp(t->module, name) != 0 || t->base)
            continue;
        PyObject *cls = mod ? get_dotted(mod, t->cls) : NULL;
        if (!cls) {
            if (mod && (executed || module_executed(mod)))
                say_unguarded(t, NULL);
            missing++;
            continue;
        }
        /* The first target class: now libunwind is loaded and warmed up
         * (a pipe, pages, libgcc_s), never in a process without targets. */
        tg_native_init();
        t->base = cls; /* keeps the reference */
        /* One class may carry several targets (run, warmup): share base. */
        for (int j = 0; j < ntargets; j++)
            if (j != i && !targets[j].base && strcmp(targets[j].module, name) == 0 &&
                strcmp(targets[j].cls, t->cls) == 0) {
                targets[j].base = cls;
                tg_py.Py_IncRef(cls);
            }
        guard_family_methods(cls, cls, "target");
        if (!t->user)
            tg_guard_install_markers(cls);
        for (int j = 0; j < ntargets; j++) /* t and the targets sharing its class */
            if (targets[j].base == cls)
                say_unguarded(&targets[j], cls);
        guard_existing_subclasses(cls, cls, 0);
        hook_subclasses(cls);
    }
    tg_py.PyErr_Clear();
    return missing;
}

TG_STARTUP static void arm_loaded_modules(void)
{
    for (int i = 0; i < ntargets; i++)
        if (!targets[i].base)
            arm_module(targets[i].module, 0);
}

/* exec_module wrapper: run the module, then guard its targets at once. */
static PyObject *exec_module_hook(PyObject *pair, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *orig = tg_py.PyTuple_GetItem(pair, 0);
    PyObject *name = tg_py.PyTuple_GetItem(pair, 1);
    PyObject *res = tg_py.PyObject_Vectorcall
                        ? tg_py.PyObject_Vectorcall(orig, args, (size_t)nargs, kwnames)
                        : tg_py._PyObject_MakeTpCall(tg_py.PyThreadState_Get(), orig, args, nargs, kwnames);
    if (res) {
        const char *n = tg_py.PyUnicode_AsUTF8(name);
        struct tg_thread *t = tg__self_busy();
        if (n) {
            t->busy++;
            arm_module(n, 1); /* its exec_module returned: it ran to the end */
            t->busy--;
        }
        tg_py.PyErr_Clear();
    }
    return res;
}
static PyMethodDef exec_module_def = {"exec_module", (void *)exec_module_hook, TG_METH_FASTCALL | TG_METH_KEYWORDS,
                                      NULL};

/* The meta-path finder's find_spec(name, path, target=None): for target
 * modules only, ask the finders after us for the spec and wrap its loader's
 * exec_module; for everything else return None at once.  finder_self
 * only tells our own finder apart in sys.meta_path: no reference of ours
 * (the list holds the finder), so that at finalization the finder and its
 * class go with sys.meta_path.  A finder of ours kept alive to the end
 * pinned the obmalloc arena it was made in, which then stayed resident
 * through finalization: +120 KiB of peak RSS in `python -c pass`
 * (docs/benchmarks.md, "Start-up cost"). */
static PyObject *finder_self;

/* Argument i of a vectorcall by position or by keyword (borrowed), or None. */
TG_STARTUP static PyObject *vc_arg(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t i, const char *kw)
{
    if (i < nargs)
        return args[i];
    Py_ssize_t nkw = kwnames ? tg_py.PyTuple_Size(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *n = tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(kwnames, k));
        if (n && strcmp(n, kw) == 0)
            return args[nargs + k];
    }
    tg_py.PyErr_Clear();
    return tg_py.none;
}

TG_STARTUP static PyObject *find_spec(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    (void)self;
    PyObject *fullname = vc_arg(args, nargs, kwnames, 0, "fullname");
    const char *name = fullname != tg_py.none ? tg_py.PyUnicode_AsUTF8(fullname) : NULL;
    if (!name || !is_target_module(name) || tg_py_resolve_guards() < 0) {
        tg_py.PyErr_Clear();
        tg_py.Py_IncRef(tg_py.none);
        return tg_py.none;
    }
    PyObject *sys = tg_py.PyImport_ImportModule("sys");
    PyObject *meta = sys ? tg_py.PyObject_GetAttrString(sys, "meta_path") : NULL;
    PyObject *it = meta ? tg_py.PyObject_GetIter(meta) : NULL;
    PyObject *spec = NULL, *finder;
    while (it && !spec && (finder = tg_py.PyIter_Next(it))) {
        if (finder != finder_self && tg_py.PyObject_HasAttrString(finder, "find_spec")) {
            PyObject *fs = tg_py.PyObject_GetAttrString(finder, "find_spec");
            PyObject *r = fs ? tg_py.PyObject_CallFunctionObjArgs(fs, fullname,
                                                                  vc_arg(args, nargs, kwnames, 1, "path"),
                                                                  vc_arg(args, nargs, kwnames, 2, "target"), NULL)
                             : NULL;
            if (fs)
                tg_py.Py_DecRef(fs);
            if (r && r != tg_py.none)
                spec = r;
            else if (r)
                tg_py.Py_DecRef(r);
            tg_py.PyErr_Clear();
        }
        tg_py.Py_DecRef(finder);
    }
    if (it)
        tg_py.Py_DecRef(it);
    if (meta)
        tg_py.Py_DecRef(meta);
    if (sys)
        tg_py.Py_DecRef(sys);
    tg_py.PyErr_Clear();
    if (!spec) {
        tg_py.Py_IncRef(tg_py.none);
        return tg_py.none;
    }
    PyObject *loader = tg_py.PyObject_GetAttrString(spec, "loader");
    PyObject *orig = loader ? tg_py.PyObject_GetAttrString(loader, "exec_module") : NULL;
    PyObject *pair = orig ? tg_py.PyTuple_Pack(2, orig, fullname) : NULL;
    PyObject *hook = pair ? tg_py.PyCFunction_NewEx(&exec_module_def, pair, NULL) : NULL;
    if (!hook || tg_py.PyObject_SetAttrString(loader, "exec_module", hook) < 0) {
        /* A loader we cannot annotate: the audit-event fallback applies. */
        module_pending = 1;
        tg_arm_pending = 1;
    }
    tg_py.PyErr_Clear();
    if (hook)
        tg_py.Py_DecRef(hook);
    if (pair)
        tg_py.Py_DecRef(pair);
    if (orig)
        tg_py.Py_DecRef(orig);
    if (loader)
        tg_py.Py_DecRef(loader);
    return spec;
}
/* importlib.invalidate_caches() calls this on every finder that has it. */
TG_STARTUP static PyObject *invalidate_caches(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    tg_py.Py_IncRef(tg_py.none);
    return tg_py.none;
}

TG_STARTUP static PyObject *finder_repr(PyObject *self)
{
    (void)self;
    return tg_py.PyUnicode_FromString("<tunerguard finder: guards the tuners of modules named in targets>");
}

/* The finder's type, made from a spec (PyType_FromSpec: stable since 3.2, no
 * import, no module): an ordinary hashable object with find_spec and
 * invalidate_caches, a repr and a type named tunerguard.Finder.  The layout
 * below is the C API's stable ABI (PyType_Spec, PyType_Slot, typeslots.h). */
static PyMethodDef finder_methods[] = {
    {txt_find_spec, (void *)find_spec, TG_METH_FASTCALL | TG_METH_KEYWORDS,
     "find_spec(fullname, path, target=None): None, except for a module named in tunerguard's targets"},
    {txt_invalidate_caches, (void *)invalidate_caches, TG_METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
struct tg_type_slot {
    int slot;
    void *pfunc;
};
struct tg_type_spec {
    const char *name;
    int basicsize, itemsize; /* 0: object's */
    unsigned int flags;
    struct tg_type_slot *slots;
};
#define TG_TP_DOC 56
#define TG_TP_METHODS 64
#define TG_TP_REPR 66
#define TG_TPFLAGS_DEFAULT (1UL << 18) /* Py_TPFLAGS_HAVE_VERSION_TAG: set or implied on 3.9-3.13 */
static struct tg_type_slot finder_slots[] = {
    {TG_TP_DOC, (void *)txt_finder_doc},
    {TG_TP_METHODS, finder_methods},
    {TG_TP_REPR, (void *)finder_repr},
    {0, NULL},
};
static struct tg_type_spec finder_spec = {txt_finder_name, 0, 0, TG_TPFLAGS_DEFAULT, finder_slots};

TG_STARTUP static void install_finder(void)
{
    PyObject *type = tg_py.PyType_FromSpec(&finder_spec);
    PyObject *noargs = type ? tg_py.PyTuple_Pack(0) : NULL;
    /* PyObject_Call, not PyObject_CallObject: the same window reason as
     * tg_py_decref */
    PyObject *finder = noargs ? tg_py.PyObject_Call(type, noargs, NULL) : NULL;
    if (noargs)
        tg_py_decref(noargs);
    PyObject *sys = tg_py.PyImport_AddModule(txt_sys); /* borrowed; always there */
    PyObject *meta = sys ? tg_py.PyObject_GetAttrString(sys, txt_meta_path) : NULL;
    if (finder && meta && tg_py.PyList_Insert(meta, 0, finder) == 0) {
        finder_self = finder; /* identity only: the list holds it */
    } else {
        tg_py.PyErr_Clear();
        tg__info(1, "could not add the import finder; targets are found through audit events only");
    }
    if (finder)
        tg_py_decref(finder);
    if (meta)
        tg_py_decref(meta);
    if (type)
        tg_py_decref(type); /* the instance holds its type */
    tg_py.PyErr_Clear();
}

/* ---- pending modules ---------------------------------------------------------------- */

TG_STARTUP void tg_arm_process_pending(void)
{
    struct tg_thread *t = tg__self_busy();
    if (t->busy)
        return;
    /* Finalizing: sys.modules may be gone (PyImport_GetModuleDict is fatal
     * then); nothing imported now needs guarding. */
    int (*fin)(void) = tg_py.Py_IsFinalizing ? tg_py.Py_IsFinalizing : tg_py._Py_IsFinalizing;
    if (fin && fin()) {
        tg_arm_pending = module_pending = 0;
        return;
    }
    t->busy++;
    tg_arm_pending = 0;
    int still = 0;
    if (module_pending) {
        module_pending = 0;
        for (int i = 0; i < ntargets; i++)
            if (!targets[i].base && arm_module(targets[i].module, 0) > 0) {
                PyObject *mods = tg_py.PyImport_GetModuleDict();
                if (mods && tg_py.PyDict_GetItemString(mods, targets[i].module))
                    still = 1; /* importing now: the class is not defined yet */
            }
        module_pending = still;
        tg_arm_pending = tg_arm_pending || still;
    }
    tg_py.PyErr_Clear();
    t->busy--;
}

/* ---- the audit hook ---------------------------------------------------------------------- */

TG_STARTUP static void arm(void)
{
    armed = 1;
    /* cpython.run_* is raised by the main interpreter only (Modules/main.c).
     * Kept to tell a subinterpreter's events apart without calling
     * PyInterpreterState_Main on each event (see tg_py_decref on why). */
    if (tg_py.PyInterpreterState_Get)
        main_interp = tg_py.PyInterpreterState_Get();
    if (tg_py_resolve() < 0)
        return;
    tg_activate(); /* the report path (log_path) before its facts */
    tg_proc_arm(); /* relative report paths: the directory the program started in */
    struct tg_thread *t = tg__self_busy();
    t->busy++;
    parse_targets(1);
    install_finder();
    arm_loaded_modules();
    tg_cupti_maybe_start(1); /* cupti=1 and libcuda already loaded (else at a later event) */
    t->busy--;
}

/* An interpreter tunerguard does not serve (older than 3.9, free-threaded):
 * no finder, nothing guarded; one line when a target module is imported,
 * where the program would have been guarded.  The "import" event has the
 * module's name in args[0] on every version with audit hooks (3.8+). */
TG_STARTUP static void parse_targets_quietly(void)
{
    parse_targets(0);
}

TG_STARTUP static void unsupported_event(const char *event, PyObject *args)
{
    static int said;
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* free-threaded: imports run in parallel */
    if (__atomic_load_n(&said, __ATOMIC_RELAXED) || strcmp(event, ev_import) != 0)
        return;
    if (tg_py_resolve_unsupported() < 0)
        return;
    pthread_once(&once, parse_targets_quietly);
    const char *name = tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(args, 0));
    tg_py.PyErr_Clear();
    if (!name || !is_target_module(name) || __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        return;
    if (tg_py.free_threaded)
        tg__warn("%s imported, but this Python (%s) is a free-threaded build, which tunerguard does not serve: "
                 "its tuners run unguarded", name, tg_py.version);
    else
        tg__warn("%s imported, but this Python (%s) is older than 3.9, which tunerguard does not serve: "
                 "its tuners run unguarded", name, tg_py.version);
}

TG_STARTUP static int audit_hook(const char *event, PyObject *args, void *data)
{
    (void)data;
    if (event[0] != 'c' && event[0] != 'i')
        return 0;
    if (!tg_py.supported) {
        unsupported_event(event, args);
        return 0;
    }
    struct tg_thread *t = tg__self_busy();
    if (t->busy)
        return 0;
    if (!armed) {
        /* Arm once the interpreter is about to run user code. */
        if (strncmp(event, ev_run_prefix, sizeof ev_run_prefix - 1) == 0 && tg_py_resolve() == 0 &&
            tg_py.Py_IsInitialized())
            arm();
        return 0;
    }
    /* The hook fires in every interpreter; guards, targets and the finder
     * belong to the main one.  A subinterpreter is left alone (its objects
     * must not become our targets), with one line once per process. */
    if (main_interp && tg_py.PyInterpreterState_Get() != main_interp) {
        static int said;
        const char *name = event[0] == 'i' && strcmp(event, ev_import) == 0
                               ? tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(args, 0)) : NULL;
        if (name && is_target_module(name) && !said++)
            tg__warn("%s imported in a subinterpreter: subinterpreters are not supported, their tuner calls "
                     "run unguarded (the main interpreter stays guarded)", name);
        tg_py.PyErr_Clear();
        return 0;
    }
    if (strcmp(event, ev_import) == 0) {
        const char *name = tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(args, 0));
        if (name && is_target_module(name)) {
            module_pending = 1;
            tg_arm_pending = 1;
        }
        tg_py.PyErr_Clear();
    } else if (strcmp(event, ev_clear_hooks) == 0) {
        tg_arm_exit_summary();
        return 0;
    }
    if (tg_opts.cupti)
        tg_cupti_maybe_start(0); /* once libcuda was seen; one load after that */
    if (tg_arm_pending)
        tg_arm_process_pending();
    return 0;
}

TG_STARTUP void tg_arm_init(void)
{
    if (tg_py_resolve_hook() < 0)
        return;
    /* Legal before Py_Initialize, on 3.9 to 3.13, shared or static. */
    tg_py.PySys_AddAuditHook(audit_hook, NULL);
}

/* ---- exit summary --------------------------------------------------------------------------- */

TG_STARTUP void tg_arm_atfork_child(void)
{
    summary_done = 0;
}

TG_STARTUP void tg_arm_exit_summary(void)
{
    if (summary_done)
        return;
    summary_done = 1;
    tg_emit_flush_repeats(); /* the repeat counts, before the line that sums them up */
    struct tg_guard_stats s = {0};
    if (tg_guard_count() > 0) /* else no guarded call, no wait: not even a look */
        tg_guard_stats(&s);
    struct tg_emit_stats est;
    tg_emit_stats(&est);
    const struct tg_emit_stats *es = &est;
    /* A line only when something was reported or the mode changed what the
     * program did (a serialized call); low-severity overlaps alone are the
     * normal life of a tuned kernel called from several threads. */
    if (es->reports == 0 && es->races_seen == 0 && s.waits == 0 && es->prevented_seen == 0)
        return;
    char line[900];
    size_t n = 0;
#define ADD(...) (n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, __VA_ARGS__))
    /* The kinds' parts (the exit column of core/report_kinds.inc), in the
     * order of their parts: FIRST .. LOAD, the serialized calls, SERIALIZE. */
#define TG_EXIT_NONE
#define TG_EXIT(part_, when, n, fmt, ...)                                                          \
    if (part == TG_EXIT_PART_##part_ && (when)) {                                                  \
        unsigned long long c = (n);                                                                \
        ADD(fmt, c, c == 1 ? "" : "s", ##__VA_ARGS__);                                             \
    }
#define TG_REPORT_KIND(ID, json, title, what, body, supp, flags, exit) exit
    enum { TG_EXIT_PART_FIRST, TG_EXIT_PART_LINKED, TG_EXIT_PART_PREVENTED, TG_EXIT_PART_LOAD, TG_EXIT_PART_SERIALIZE };
    for (int part = TG_EXIT_PART_FIRST; part <= TG_EXIT_PART_LOAD; part++) {
#include "core/report_kinds.inc"
    }
    if (s.waits) {
        char kernels[256];
        tg_guard_contended(kernels, sizeof kernels);
        ADD("; %llu call%s serialized, waited %.3f s in total (contended: %s)", (unsigned long long)s.waits,
            s.waits == 1 ? "" : "s", (double)s.wait_ns / 1e9, kernels[0] ? kernels : "?");
    }
    {
        int part = TG_EXIT_PART_SERIALIZE;
#include "core/report_kinds.inc"
    }
#undef TG_REPORT_KIND
#undef TG_EXIT
#undef TG_EXIT_NONE
    if (es->overlaps)
        ADD("; %llu overlap%s on already tuned keys (low severity%s)", (unsigned long long)es->overlaps,
            es->overlaps == 1 ? "" : "s", tg_opts.verbosity >= 1 ? "" : ", verbosity=1 shows them");
    const char *path = tg_sink_text_path();
    if (path[0] && es->reports)
        ADD("; reports in %s", path);
#undef ADD
    tg__warn("%s", line);
}
