/* Arming, the core's part: what runs once a target module is there (the
 * loader's part, loader/py_arm.c, decides that and calls here through the
 * core's table, loader/core_api.h).
 *
 *   a target module in sys.modules -> its classes guarded, their existing
 *                       subclasses too, __init_subclass__ hooked on each
 *                       guarded base for subclasses defined later
 *   the finder names a target      -> the spec of the finders after ours,
 *                       its loader's exec_module wrapped to guard right after
 *   exit              -> the one-line summary
 *
 * Every function here runs on an attached thread (the GIL held, where there
 * is one), under the arming lock (tg__arm_lock, loader/py_arm_internal.h,
 * the guard's install lock too), the exit summary aside, which runs at exit
 * or in the audit hook's last event, once (an exchange).  Classes made from
 * a guarded base (tg__guard_class_made, every class the program makes) read
 * the bases without the lock (nbases published by a release store once the
 * slot is filled) and take it only for one that derives from them.  None
 * leaves an exception set. */
#include "loader/py_arm.h"
#include "loader/py_arm_internal.h"
#include "reports/emit.h"
#include "reports/native_stack.h"
#include "reports/py_stack.h"
#include "reports/report.h"
#include "core/log.h"
#include "core/options.h"
#include "core/py_api.h"
#include "core/py_attr.h"
#include "core/py_ref.h"
#include "guard/guard_internal.h"
#include "guard/py_guard.h"
#include "guard/lifecycle.h"
#include "detectors/tuner_table.h"
#include "core/thread_state.h"

#include <stdio.h>
#include <string.h>


/* Guarded base classes, each with its __init_subclass__ hook. */
#define TG_MAX_BASES 32
struct base {
    PyObject *cls;
    PyObject *orig_init_subclass; /* cls.__dict__['__init_subclass__'] or NULL */
    PyMethodDef def;
};
static struct base bases[TG_MAX_BASES]; /* filled under tg__arm_lock, then published */
static int nbases;                      /* release store under tg__arm_lock; acquire load */

static int summary_done; /* an exchange: the line once */


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
        tg__install_lock();
        guard_family_methods(cls, b->cls, "subclass defined");
        tg__install_unlock();
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

/* See guard/guard_internal.h.  Each watched base cls derives from (cls
 * itself aside: a reloaded module's class is armed as a target). */
void tg__guard_class_made(PyObject *cls)
{
    struct tg_thread *t = tg__self();
    if (t->busy || tg_opts.mode == TG_MODE_OFF)
        return;
    t->busy++;
    for (int i = 0, n = __atomic_load_n(&nbases, __ATOMIC_ACQUIRE); i < n; i++)
        if (bases[i].cls != cls && tg_py.PyType_IsSubtype(cls, bases[i].cls)) {
            tg__install_lock();
            guard_family_methods(cls, bases[i].cls, "subclass defined");
            tg__install_unlock();
        }
    t->busy--;
}

/* Watch base's subclasses made from now on: type's tp_new hooked
 * (guard_setattr.c), else, where that cannot be, an __init_subclass__ put
 * on base (seen by vars() and inspect).  tg__arm_lock held; the slot is
 * published (nbases) once filled. */
static void hook_subclasses(PyObject *base)
{
    for (int i = 0; i < nbases; i++)
        if (bases[i].cls == base)
            return;
    if (nbases == TG_MAX_BASES) {
        static unsigned said;
        tg__say_capped(&said, 1, 0,
                       "cannot watch subclasses of more than %d guarded classes; overrides defined later in "
                       "subclasses of the others run unguarded", TG_MAX_BASES);
        return;
    }
    struct base *b = &bases[nbases];
    memset(b, 0, sizeof *b);
    b->cls = base;
    tg_py.Py_IncRef(base);
    if (tg__guard_watch_new()) {
        __atomic_store_n(&nbases, nbases + 1, __ATOMIC_RELEASE); /* classes made from it reach tg__guard_class_made */
        return;
    }
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
        __atomic_store_n(&nbases, nbases + 1, __ATOMIC_RELEASE);
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

/* Guard, on cls, every target method whose target class is `base`.  For a
 * subclass of a declared tuner, first its overrides of the tuning steps
 * tuning= names on base: marked, as base's are, before its own entry point
 * is guarded (arm_class's order: an entry point is marked only when its
 * class's step is). */
static void guard_family_methods(PyObject *cls, PyObject *base, const char *why)
{
    tg_lifecycle_arm_fork(); /* from the first guard on, a fork child has state to reset */
    for (int i = 0; cls != base && tg_opts.tuning[0] && i < tg__arm_ntargets; i++)
        if (tg__arm_targets[i].base == base && tg__arm_targets[i].user) {
            tg_guard_install_tuning_steps(cls, tg__arm_targets[i].module, tg__arm_targets[i].cls);
            break; /* once: the entries are matched by base's module and class */
        }
    for (int i = 0; i < tg__arm_ntargets; i++)
        if (tg__arm_targets[i].base == base) {
            tg_guard_install(cls, tg__arm_targets[i].method, why, tg__arm_targets[i].user);
            tg__guard_run_shape(cls, base, tg__arm_targets[i].method, tg__arm_targets[i].user);
        }
}

/* Is a target method of base guarded on base itself? */
static int family_guarded(PyObject *base)
{
    int yes = 0;
    for (int i = 0; i < tg__arm_ntargets && !yes; i++) {
        if (tg__arm_targets[i].base != base)
            continue;
        PyObject *v = tg_py.PyObject_GetAttrString(base, tg__arm_targets[i].method);
        yes = v && tg_guard_is_ours(v);
        if (v)
            tg_py.Py_DecRef(v);
        tg_py.PyErr_Clear();
    }
    return yes;
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
static int module_executed(PyObject *mod)
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
static void say_unguarded(struct tg__arm_target *t, PyObject *cls)
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
        /* A function of a kind install() takes: it tried, failed and said why
         * in its own line (the class refused the attribute, no slot left). */
        int tried = tname && (strcmp(tname, "function") == 0 || strcmp(tname, "cython_function_or_method") == 0);
        if (!tried)
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

/* Guard t->base, the class of t and of the targets sharing it: its target
 * methods, the tuning methods (Triton's on a built-in target's class, those
 * tuning= names on a declared one), its subclasses now and later. */
static void arm_class(const struct tg__arm_target *t, const char *why)
{
    PyObject *cls = t->base;
    if (t->user) /* first: a declared tuner is marked only when its step is (tg_guard_install) */
        tg_guard_install_tuning_steps(cls, t->module, t->cls);
    guard_family_methods(cls, cls, why);
    if (!t->user)
        tg_guard_install_markers(cls);
    for (int j = 0; j < tg__arm_ntargets; j++) /* the targets sharing the class */
        if (tg__arm_targets[j].base == cls)
            say_unguarded(&tg__arm_targets[j], cls);
    guard_existing_subclasses(cls, cls, 0);
    if (family_guarded(cls))
        hook_subclasses(cls); /* not for a class that refused its guard: nothing of it to follow */
}

/* Is there a target entry for module:qual.method whose class is cls? */
static int has_target(const struct tg__arm_target *t, PyObject *cls)
{
    for (int i = 0; i < tg__arm_ntargets; i++)
        if (tg__arm_targets[i].base == cls && strcmp(tg__arm_targets[i].module, t->module) == 0 &&
            strcmp(tg__arm_targets[i].cls, t->cls) == 0 && strcmp(tg__arm_targets[i].method, t->method) == 0)
            return 1;
    return 0;
}

/* Module `name` ran again (importlib.reload, or imported anew after its
 * sys.modules entry was deleted): its classes are new objects, which the
 * targets found before do not name.  Each target class that is a new class
 * gets an entry of its own, guarded as the first one was; the old classes
 * stay guarded for the instances made from them.  One line when the table
 * is full.  The install lock held; the thread is busy. */
static void arm_reloaded(const char *name, PyObject *mod)
{
    const int n = tg__arm_ntargets;
    for (int i = 0; i < n; i++) {
        struct tg__arm_target *t = &tg__arm_targets[i];
        if (!t->base || strcmp(t->module, name) != 0)
            continue;
        PyObject *cls = get_dotted(mod, t->cls);
        if (!cls || cls == t->base || !tg_guard_is_class(cls) || has_target(t, cls)) {
            if (cls)
                tg_py.Py_DecRef(cls);
            continue;
        }
        if (tg__arm_ntargets == TG_MAX_TARGETS) {
            static unsigned said;
            tg__say_capped(&said, 1, 0,
                           "%s was run again (a reload): the table of guarded targets is full (%d), so its new "
                           "class %s runs unguarded", name, TG_MAX_TARGETS, t->cls);
            tg_py.Py_DecRef(cls);
            continue;
        }
        struct tg__arm_target *nt = &tg__arm_targets[tg__arm_ntargets];
        *nt = *t;
        nt->base = cls; /* keeps the reference */
        nt->said = 0;
        __atomic_store_n(&tg__arm_ntargets, tg__arm_ntargets + 1, __ATOMIC_RELEASE); /* filled first */
    }
    for (int i = n; i < tg__arm_ntargets; i++) { /* each new class once */
        int first = 1;
        for (int j = n; j < i && first; j++)
            first = tg__arm_targets[j].base != tg__arm_targets[i].base;
        if (first) {
            tg__info(2, "%s ran again: guarding its new class %s", name, tg__arm_targets[i].cls);
            arm_class(&tg__arm_targets[i], "target, module run again");
        }
    }
}

/* See loader/py_arm_internal.h.  The loader resolved the rest of the API
 * table (tg_py_resolve_guards) before calling. */
static int arm_guard_module_locked(const char *name, PyObject *mod, int executed);
int tg__arm_guard_module(const char *name, PyObject *mod, int executed)
{
    tg__install_lock(); /* held already when the loader calls: re-entered */
    int missing = arm_guard_module_locked(name, mod, executed);
    tg__install_unlock();
    return missing;
}

static int arm_guard_module_locked(const char *name, PyObject *mod, int executed)
{
    int missing = 0;
    static int stdlib_known;
    if (!stdlib_known) { /* before any report can be written */
        stdlib_known = 1;
        tg_py_stack_arm();
    }
    /* mod is borrowed from sys.modules, and the look-ups below run Python
     * code (a module __getattr__, a lazy module) that may replace it there:
     * held for the loop, or the next look-up reads a freed module. */
    if (mod)
        tg_py.Py_IncRef(mod);
    for (int i = 0; i < tg__arm_ntargets; i++) {
        struct tg__arm_target *t = &tg__arm_targets[i];
        if (strcmp(t->module, name) != 0 || t->base)
            continue;
        PyObject *cls = mod ? get_dotted(mod, t->cls) : NULL;
        if (cls && !tg_guard_is_class(cls)) {
            /* a module or an instance where a class belongs (targets=pkg:mod.run) */
            PyObject *type = tg_py.PyObject_Type(cls);
            char tname[64];
            tg_py_attr_str(type, "__name__", tname, sizeof tname);
            if (type)
                tg_py.Py_DecRef(type);
            if (!t->said)
                tg__warn("targets=%s:%s.%s: %s is a %s, not a class; nothing guarded", t->module, t->cls, t->method,
                         t->cls, tname[0] ? tname : "?");
            t->said = 1;
            tg_py.Py_DecRef(cls);
            continue; /* not missing: there is nothing to wait for */
        }
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
        for (int j = 0; j < tg__arm_ntargets; j++)
            if (j != i && !tg__arm_targets[j].base && strcmp(tg__arm_targets[j].module, name) == 0 &&
                strcmp(tg__arm_targets[j].cls, t->cls) == 0) {
                tg__arm_targets[j].base = cls;
                tg_py.Py_IncRef(cls);
            }
        arm_class(t, "target");
    }
    if (mod && executed)
        arm_reloaded(name, mod);
    tg_py.PyErr_Clear();
    if (mod)
        tg_py.Py_DecRef(mod);
    return missing;
}


/* exec_module wrapper: the loader put back as it was, then the module run,
 * then its targets guarded at once.  pair: (the original exec_module
 * (bound), the module's name, the loader, what the loader's own __dict__
 * held under "exec_module" before, or None). */
static PyObject *exec_module_hook(PyObject *pair, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *orig = tg_py.PyTuple_GetItem(pair, 0);
    PyObject *name = tg_py.PyTuple_GetItem(pair, 1);
    PyObject *loader = tg_py.PyTuple_GetItem(pair, 2);
    PyObject *prior = tg_py.PyTuple_GetItem(pair, 3);
    if (loader) { /* a shared loader (a zipimporter, a class) keeps nothing of ours */
        struct tg_thread *t = tg__self_busy();
        t->busy++;
        if (tg_py.PyObject_SetAttrString(loader, "exec_module", prior != tg_py.none ? prior : NULL) < 0)
            tg_py.PyErr_Clear();
        t->busy--;
    }
    PyObject *res = tg_py.PyObject_Vectorcall
                        ? tg_py.PyObject_Vectorcall(orig, args, (size_t)nargs, kwnames)
                        : tg_py._PyObject_MakeTpCall(tg_py.PyThreadState_Get(), orig, args, nargs, kwnames);
    if (res) {
        const char *n = tg_py.PyUnicode_AsUTF8(name);
        struct tg_thread *t = tg__self_busy();
        if (n) {
            t->busy++;
            PyObject *mods = tg_py.PyImport_GetModuleDict();
            PyObject *mod = tg_py_dict_get_str(mods, n);
            if (mod) {
                tg__arm_guard_module(n, mod, 1); /* its exec_module returned: it ran to the end */
                tg_py.Py_DecRef(mod);
            }
            t->busy--;
        }
        tg_py.PyErr_Clear();
    }
    return res;
}
static PyMethodDef exec_module_def = {"exec_module", (void *)exec_module_hook, TG_METH_FASTCALL | TG_METH_KEYWORDS,
                                      NULL};

/* See loader/py_arm_internal.h: the finders after ours, in sys.meta_path
 * order, asked for the spec; its loader's exec_module wrapped. */
PyObject *tg__arm_find_target_spec(PyObject *fullname, PyObject *path, PyObject *target)
{
    PyObject *sys = tg_py.PyImport_ImportModule("sys");
    PyObject *meta = sys ? tg_py.PyObject_GetAttrString(sys, "meta_path") : NULL;
    PyObject *it = meta ? tg_py.PyObject_GetIter(meta) : NULL;
    PyObject *spec = NULL, *finder;
    int raised = 0;
    while (it && !spec && !raised && (finder = tg_py.PyIter_Next(it))) {
        if (finder != tg__arm_finder_self && tg_py.PyObject_HasAttrString(finder, "find_spec")) {
            PyObject *fs = tg_py.PyObject_GetAttrString(finder, "find_spec");
            PyObject *r = fs ? tg_py.PyObject_CallFunctionObjArgs(fs, fullname, path, target, NULL) : NULL;
            /* A finder that raises: the import fails as it would without us
             * (importlib lets a find_spec's exception through). */
            raised = fs && !r;
            if (fs)
                tg_py.Py_DecRef(fs);
            if (r && r != tg_py.none)
                spec = r;
            else if (r)
                tg_py.Py_DecRef(r);
            if (!raised)
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
    if (raised)
        return NULL; /* the finder's exception, set (a decref above runs no code that clears it) */
    tg_py.PyErr_Clear();
    if (!spec) {
        tg_py.Py_IncRef(tg_py.none);
        return tg_py.none;
    }
    PyObject *loader = tg_py.PyObject_GetAttrString(spec, "loader");
    PyObject *orig = loader ? tg_py.PyObject_GetAttrString(loader, "exec_module") : NULL;
    /* What the loader's own namespace holds (a class used as a loader: its
     * classmethod), put back when the wrapper runs. */
    PyObject *own = loader ? tg_py.PyObject_GetAttrString(loader, "__dict__") : NULL;
    PyObject *key = own ? tg_py.PyUnicode_FromString("exec_module") : NULL;
    PyObject *prior = key ? tg_py.PyObject_GetItem(own, key) : NULL;
    tg_py.PyErr_Clear();
    PyObject *pair = orig ? tg_py.PyTuple_Pack(4, orig, fullname, loader, prior ? prior : tg_py.none) : NULL;
    PyObject *drop[] = {prior, key, own};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        if (drop[i])
            tg_py.Py_DecRef(drop[i]);
    PyObject *hook = pair ? tg_py.PyCFunction_NewEx(&exec_module_def, pair, NULL) : NULL;
    if (!hook || tg_py.PyObject_SetAttrString(loader, "exec_module", hook) < 0) {
        /* A loader we cannot annotate: the audit-event fallback applies. */
        __atomic_store_n(&tg__arm_module_pending, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&tg_arm_pending, 1, __ATOMIC_RELEASE);
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

/* ---- exit summary --------------------------------------------------------------------------- */

void tg_arm_atfork_child(void)
{
    summary_done = 0;
    tg_py_lock_atfork_child(&tg__arm_lock); /* a parent's thread arming or installing at the fork */
}

void tg__arm_finalizing_core(void)
{
    tg__guard_unwatch_setattr();
    tg__arm_exit_summary_core();
}

void tg__arm_exit_summary_core(void)
{
    if (__atomic_load_n(&summary_done, __ATOMIC_RELAXED) || __atomic_exchange_n(&summary_done, 1, __ATOMIC_ACQ_REL))
        return;
    tg_emit_flush_repeats(); /* the repeat counts, before the line that sums them up */
    struct tg_guard_stats s = {0};
    if (tg_guard_count() > 0) /* else no guarded call, no wait: not even a look */
        tg_guard_stats(&s);
    struct tg_emit_stats est;
    tg_emit_stats(&est);
    est.overlaps += tg_tuner_overlaps(); /* counted on the tuners (guard/race_decide.c) */
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
        char kernels[512];
        tg_guard_contended(kernels, sizeof kernels);
        ADD("; %llu call%s serialized, waited %.3f s in total", (unsigned long long)s.waits,
            s.waits == 1 ? "" : "s", (double)s.wait_ns / 1e9);
        if (s.still_waiting)
            ADD(" (%llu still waiting at exit)", (unsigned long long)s.still_waiting);
        if (kernels[0])
            ADD(" (contended: %s)", kernels);
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
    if (es->capped)
        ADD("; %llu more report%s not written (report_cap=%d)", (unsigned long long)es->capped,
            es->capped == 1 ? "" : "s", tg_opts.report_cap);
    const char *path = tg_sink_text_path();
    if (path[0] && es->reports)
        ADD("; reports in %s", path);
#undef ADD
    /* A part that begins "; " when the race part before it had nothing to
     * say (a serialize run that only prevented races): said first. */
    tg__warn("%s", strncmp(line, "; ", 2) == 0 ? line + 2 : line);
}
