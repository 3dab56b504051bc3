/* Arming, the core's part: what runs once a target module is there (the
 * loader's part, loader/py_arm.c, decides that and calls here through the
 * core's table, loader/core_api.h).
 *
 *   a target module in sys.modules -> its classes guarded, their existing
 *                       subclasses too, and those made later watched
 *                       (guard/subclasses.c); a module run again (a reload)
 *                       gets its new classes guarded
 *   the finder names a target      -> the spec of the finders after ours,
 *                       its loader's exec_module wrapped to guard right after
 *
 * The exit line is guard/exit_summary.c's.  Every function here runs on an
 * attached thread (the GIL held, where there is one), under the arming lock
 * (tg__arm_lock, loader/py_arm_internal.h, the guard's install lock too).
 * None leaves an exception set. */
#include "loader/py_arm.h"
#include "loader/py_arm_internal.h"
#include "reports/native_stack.h"
#include "reports/py_stack.h"
#include "core/log.h"
#include "core/py_api.h"
#include "core/py_attr.h"
#include "core/py_ref.h"
#include "guard/install_internal.h"
#include "guard/py_guard.h"
#include "core/thread_state.h"

#include <stdio.h>
#include <string.h>

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
    tg__guard_family_methods(cls, cls, why);
    if (!t->user)
        tg_guard_install_markers(cls);
    for (int j = 0; j < tg__arm_ntargets; j++) /* the targets sharing the class */
        if (tg__arm_targets[j].base == cls)
            say_unguarded(&tg__arm_targets[j], cls);
    tg__guard_existing_subclasses(cls, cls, 0);
    if (family_guarded(cls))
        tg__guard_hook_subclasses(cls); /* not for a class that refused its guard: nothing of it to follow */
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
