/* What the program sets over a guarded entry point, guarded as it shows.
 *
 * A class attribute: `Autotuner.run = my_run`, made before or after the
 * first call, is guarded at the assignment itself.  CPython raises no audit
 * event for a class attribute assignment, so type's tp_setattro is hooked
 * (guard/type_slots.c switches it everywhere): the hook makes the assignment
 * through the original, then hands it to tg__guard_class_setattr
 * (guard_install.c).  Where the hook cannot go in, the replacement is found
 * at its first call through the original (tg__guard_check_replaced).
 *
 * Three places hold the original function, and all three are switched
 * together, so that type.__setattr__'s check that a slot function is not
 * applied past another C-level one (typeobject.c, hackcheck) sees one
 * function everywhere:
 *   - type's own tp_setattro;
 *   - every metaclass that inherited it (a subclass of type copies the slot
 *     when it is made: ABCMeta, EnumType, ...; those made later copy the
 *     hook);
 *   - the d_wrapped of type.__dict__['__setattr__'] and ['__delattr__']
 *     (what `type.__setattr__(cls, name, value)` and a metaclass's
 *     `super().__setattr__` / `super().__delattr__` call: Enum's).
 * When the interpreter finalizes (the audit hooks' clearing: loader/py_arm.c)
 * the hook turns into a plain call of the original, where it is
 * (tg__guard_unwatch_setattr).  Nothing is hooked when any of them does not
 * look as expected, or (3.12+) while another interpreter exists.  A wrapper
 * descriptor is a PyDescr_COMMON (header, d_type, d_name, d_qualname),
 * d_base, d_wrapped (wrapped_of).
 *
 * An instance attribute: `tuner.run = ...` shadows the class's guarded run.
 * Nothing tells tunerguard of an instance attribute (hooking the tuner
 * classes' tp_setattro would make object.__setattr__ refuse their instances
 * on 3.12+, hackcheck), so it is found when a tuning method (_bench, ...)
 * runs on the instance outside any guarded call on it
 * (tg__guard_tuning_outside).  A bound method of the instance, or a
 * functools.partial with the instance first: the function it calls is
 * guarded from then on, in its vectorcall slot (not on 3.11: no class to
 * put a descriptor on).  One line, once per class, says which, or that its
 * calls run unguarded.
 *
 * Everything here: an attached thread.  The hooks go in at the first guard
 * install (under the install lock, guard/install_internal.h), before the
 * program's own threads are likely to run, and the slots' stores stay
 * plain (guard/type_slots.c); the hooks themselves run on any thread at
 * once.  tg__guard_tuning_outside takes the install lock (the target
 * table, the said-once lists, the installs). */
#include "guard/install_internal.h"
#include "loader/py_arm_internal.h"
#include "core/log.h"
#include "core/py_attr.h"
#include "core/py_ref.h"

#include <string.h>

typedef int (*setattro_fn)(PyObject *, PyObject *, PyObject *);

static setattro_fn orig_setattro;
/* type.__dict__['__setattr__'] and ['__delattr__'] (strong): both wrap
 * tp_setattro */
static const char *const wrapper_names[2] = {"__setattr__", "__delattr__"};
static PyObject *wrappers[2];

static inline setattro_fn *slot_of(PyObject *type)
{
    return (setattro_fn *)(void *)tg__type_slot(type, TG_SLOT_SETATTRO);
}

static inline setattro_fn *wrapped_of(PyObject *wrapper)
{
    /* PyDescr_COMMON (d_type, d_name, d_qualname), d_base, then d_wrapped:
     * 48 with a GIL, 64 free-threaded */
    return (setattro_fn *)tg_py_field(wrapper, 4);
}

/* ---- class attributes ---------------------------------------------------------- */

static int hook(PyObject *cls, PyObject *name, PyObject *value)
{
    int rc = orig_setattro(cls, name, value);
    if (rc == 0 && value && !tg__type_finalizing && tg__type_in_main())
        tg__guard_class_setattr(cls, name, value);
    return rc;
}

int tg__type_setattr(PyObject *cls, PyObject *name, PyObject *value)
{
    tg__guard_watch_setattr(); /* learns type's own slot */
    return orig_setattro ? orig_setattro(cls, name, value) : tg_py.PyObject_SetAttr(cls, name, value);
}

static void switch_all(setattro_fn from, setattro_fn to)
{
    tg__type_retarget(TG_SLOT_SETATTRO, (tg__any_fn)from, (tg__any_fn)to);
    for (int i = 0; i < 2; i++)
        if (*wrapped_of(wrappers[i]) == from)
            *wrapped_of(wrappers[i]) = to;
}

/* Is w one of type's own wrappers of the slot, holding the original? */
static int wrapper_as_expected(PyObject *w)
{
    PyObject *wt = w ? tg_py.PyObject_Type(w) : NULL;
    char tname[32] = "";
    if (wt) {
        tg_py_attr_str(wt, "__name__", tname, sizeof tname);
        tg_py.Py_DecRef(wt);
    }
    return strcmp(tname, "wrapper_descriptor") == 0 && *wrapped_of(w) == orig_setattro;
}

void tg__guard_watch_setattr(void)
{
    static int done;
    if (done++)
        return;
    PyObject *type_type = tg__type_learn();
    if (!type_type)
        return;
    orig_setattro = *slot_of(type_type);
    if (orig_setattro && tg__type_others_exist("a guarded method replaced by the program is guarded at its first "
                                               "call through the original, and classes made later are watched "
                                               "through an __init_subclass__, not")) {
        orig_setattro = NULL; /* tg__type_setattr: PyObject_SetAttr */
        return;
    }
    PyObject *dict = tg_py.PyObject_GetAttrString(type_type, "__dict__");
    int wrappers_ok = 1;
    for (int i = 0; i < 2; i++) {
        PyObject *key = tg_py.PyUnicode_FromString(wrapper_names[i]);
        wrappers[i] = dict && key ? tg_py.PyObject_GetItem(dict, key) : NULL;
        tg_py.PyErr_Clear();
        wrappers_ok = wrappers_ok && wrapper_as_expected(wrappers[i]);
        if (key)
            tg_py.Py_DecRef(key);
    }
    tg__type_learn_subclasses();
    if (orig_setattro && wrappers_ok && tg__type_subclasses_of) {
        switch_all(orig_setattro, hook);
    } else {
        tg__info(1, "cannot watch class attribute assignments; a guarded method replaced by the program is "
                    "guarded at its first call through the original");
        orig_setattro = NULL;
    }
    if (dict)
        tg_py.Py_DecRef(dict);
    tg_py.PyErr_Clear();
}

/* ---- instance attributes ------------------------------------------------------- */

/* The entry point `name` in inst's own __dict__ (a new reference), or NULL. */
static PyObject *instance_attr(PyObject *inst, const char *name)
{
    PyObject *dict = tg_py.PyObject_GetAttrString(inst, "__dict__");
    PyObject *v = tg_py_dict_get_str(dict, name);
    if (dict)
        tg_py.Py_DecRef(dict);
    tg_py.PyErr_Clear();
    return v;
}

/* The plain function v calls with inst first: a bound method of inst
 * (types.MethodType(f, inst), `self.run = self._run`) or
 * functools.partial(f, inst, ...) without keywords; a new reference, or
 * NULL.  *callee_name: the function's __qualname__ ("" if none). */
static PyObject *function_with_inst_first(PyObject *v, PyObject *inst, char callee_name[160])
{
    char tname[64];
    tg__type_name(v, tname);
    callee_name[0] = '\0';
    PyObject *fn = NULL, *first = NULL;
    if (strcmp(tname, "method") == 0) {
        first = tg_py.PyObject_GetAttrString(v, "__self__");
        fn = first == inst ? tg_py.PyObject_GetAttrString(v, "__func__") : NULL;
    } else if (strcmp(tname, "partial") == 0) {
        PyObject *args = tg_py.PyObject_GetAttrString(v, "args");
        PyObject *kw = tg_py.PyObject_GetAttrString(v, "keywords");
        int bound = args && tg_py.PyTuple_Size(args) >= 1 && tg_py.PyTuple_GetItem(args, 0) == inst &&
                    kw && tg_py.PyObject_IsTrue && tg_py.PyObject_IsTrue(kw) == 0;
        fn = bound ? tg_py.PyObject_GetAttrString(v, "func") : NULL;
        if (args)
            tg_py.Py_DecRef(args);
        if (kw)
            tg_py.Py_DecRef(kw);
    }
    if (first)
        tg_py.Py_DecRef(first);
    tg_py.PyErr_Clear();
    if (fn) {
        tg__type_name(fn, tname);
        if (!tg__is_plain_function(tname)) {
            tg_py.Py_DecRef(fn);
            return NULL;
        }
        tg_py_attr_str(fn, "__qualname__", callee_name, 160);
    }
    return fn;
}

/* inst's own `run` (v), shadowing its class's t->method: the function it
 * calls with inst first guarded (in its vectorcall slot: there is no class
 * to put a descriptor on), for t's family; one line, once per class, says
 * which and from when, or that its calls run unguarded. */
static void guard_instance_attr(PyObject *inst, PyObject *type, PyObject *v, const struct tg__arm_target *t)
{
    char callee[160];
    PyObject *fn = function_with_inst_first(v, inst, callee);
    int guarded = 0;
    if (fn && tg_guard_is_ours(fn)) { /* self.run = self.run: the guarded function itself */
        tg_py.Py_DecRef(fn);
        return;
    }
    if (fn) {
        struct tg_guard_at at = {.value = fn, .family = t->base, .vc_only = 1};
        tg__guard_install_at(type, t->method, "the function a tuner instance's own run calls", t->user, &at);
        guarded = tg_guard_is_ours(fn);
        tg_py.Py_DecRef(fn);
    }
    if (tg__said_for_class(type))
        return;
    char mod[96], qual[160], tname[64];
    tg_py_attr_str(type, "__module__", mod, sizeof mod);
    tg_py_attr_str(type, "__qualname__", qual, sizeof qual);
    tg__type_name(v, tname);
    if (guarded)
        tg__warn("a %s.%s instance has %s set on itself (a %s of %s), which shadows %s.%s: %s is guarded from now "
                 "on; this instance's calls before ran unguarded (define %s on the class, as a method)", mod, qual,
                 t->method, tname, callee, qual, t->method, callee, t->method);
    else
        tg__warn("a %s.%s instance has %s set on itself (a %s), which shadows %s.%s: calls of it run unguarded "
                 "(define %s on the class, as a method)", mod, qual, t->method, tname[0] ? tname : "?", qual,
                 t->method, t->method);
    tg_py.PyErr_Clear();
}

void tg__guard_tuning_outside(PyObject *inst)
{
    tg__install_lock();
    PyObject *type = tg_py.PyObject_Type(inst);
    for (int i = 0; type && i < tg__arm_ntargets; i++) {
        const struct tg__arm_target *t = &tg__arm_targets[i];
        if (!t->base || !tg_py.PyType_IsSubtype(type, t->base))
            continue;
        PyObject *v = instance_attr(inst, t->method);
        if (v && !tg_guard_is_ours(v))
            guard_instance_attr(inst, type, v, t);
        if (v)
            tg_py.Py_DecRef(v);
    }
    if (type)
        tg_py.Py_DecRef(type);
    tg_py.PyErr_Clear();
    tg__install_unlock();
}
