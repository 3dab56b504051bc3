/* Subclasses of a guarded tuner class: their overrides of its target
 * methods guarded, those that exist when the class is armed and those made
 * later.  Later ones are seen as they are made: type's tp_new hooked
 * (guard/type_slots.c switches it on type and every metaclass that copied
 * it; type.__new__ reads the slot of type at each call), so that nothing is
 * put in a guarded class's __dict__; where that cannot be (another
 * interpreter exists, 3.12+), an __init_subclass__ put on the guarded base
 * (seen by vars() and inspect).  The hook passes straight through from
 * finalization on, and in another interpreter.
 *
 * Everything here: an attached thread (the GIL held, where there is one),
 * under the install lock (tg__install_lock, the arming lock too).  Classes
 * made from a guarded base (tg__guard_class_made, every class the program
 * makes) read the bases without the lock (nbases published by a release
 * store once the slot is filled) and take it only for one that derives
 * from them. */
#include "guard/install_internal.h"
#include "guard/lifecycle.h"
#include "loader/py_arm_internal.h"
#include "core/log.h"
#include "core/options.h"
#include "core/thread_state.h"

#include <string.h>

typedef PyObject *(*new_fn)(PyObject *, PyObject *, PyObject *);

static new_fn orig_new;

/* Guarded base classes, each with its __init_subclass__ hook. */
#define TG_MAX_BASES 32
struct base {
    PyObject *cls;
    PyObject *orig_init_subclass; /* cls.__dict__['__init_subclass__'] or NULL */
    PyMethodDef def;
};
static struct base bases[TG_MAX_BASES]; /* filled under the install lock, then published */
static int nbases;                      /* release store under the install lock; acquire load */

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
        tg__guard_family_methods(cls, b->cls, "subclass defined");
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
            tg__guard_family_methods(cls, bases[i].cls, "subclass defined");
            tg__install_unlock();
        }
    t->busy--;
}

/* type(name, bases, namespace) made a class: handed on.  Any other call
 * (type(x), a failure) is type's own business. */
static PyObject *new_hook(PyObject *meta, PyObject *args, PyObject *kwds)
{
    PyObject *made = orig_new(meta, args, kwds);
    if (made && !tg__type_finalizing && args && tg_py.PyTuple_Size(args) == 3 && tg__type_in_main()) {
        /* A metaclass's __new__ that type.__new__ handed the call to may
         * return anything: only a class is looked at. */
        PyObject *mt = tg_py.PyObject_Type(made);
        if (mt && tg_py.PyType_IsSubtype(mt, tg__type_type))
            tg__guard_class_made(made);
        if (mt)
            tg_py.Py_DecRef(mt);
    }
    return made;
}

/* Classes made from here on reach tg__guard_class_made: 1 when the hook is
 * on.  The first call hooks, later ones answer. */
static int watch_new(void)
{
    static int done, on;
    if (done++)
        return on;
    tg__guard_watch_setattr(); /* type and type.__subclasses__ */
    if (!tg__type_type || !tg__type_subclasses_of)
        return 0;
    orig_new = *(new_fn *)(void *)tg__type_slot(tg__type_type, TG_SLOT_NEW);
    if (!orig_new) {
        tg__info(1, "cannot watch classes as they are made: type has no tp_new");
        return 0;
    }
    if (tg__type_others_exist("classes made later are watched through an __init_subclass__, not")) {
        orig_new = NULL;
        return 0;
    }
    tg__type_retarget(TG_SLOT_NEW, (tg__any_fn)orig_new, (tg__any_fn)new_hook);
    on = 1;
    return 1;
}

/* Watch base's subclasses made from now on: type's tp_new hooked
 * (watch_new), else, where that cannot be, an __init_subclass__ put
 * on base (seen by vars() and inspect).  The install lock held; the slot is
 * published (nbases) once filled. */
void tg__guard_hook_subclasses(PyObject *base)
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
    if (watch_new()) {
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
void tg__guard_family_methods(PyObject *cls, PyObject *base, const char *why)
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

/* Guard the overrides in every subclass that already exists. */
void tg__guard_existing_subclasses(PyObject *cls, PyObject *base, int depth)
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
        tg__guard_family_methods(sub, base, "existing subclass");
        tg__guard_existing_subclasses(sub, base, depth + 1);
    }
    tg_py.Py_DecRef(subs);
    tg_py.PyErr_Clear();
}
