/* The replacement watch: `Autotuner.run = my_run` made by the program before
 * (or after) the first call is guarded at the assignment itself.  CPython
 * raises no audit event for a class attribute assignment, so type's
 * tp_setattro is hooked: the hook makes the assignment through the
 * original, then hands it to tg__guard_class_setattr (guard_install.c).
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
 * the hooks turn into plain calls of the original, where they are (see
 * tg__guard_unwatch_setattr).  Nothing is hooked when any of them does not
 * look as expected.
 *
 * Other interpreters.  From 3.12 on, type is shared by all interpreters but
 * each has its own type.__dict__ (its own wrappers, made when it started,
 * holding the slot function of that moment) and its own type.__subclasses__()
 * (its own metaclasses).  An interpreter that already runs when the slots are
 * switched keeps the original in both, out of reach from here, and its
 * hackcheck then refuses every type.__setattr__ / __delattr__ (Enum's
 * super().__setattr__ among them: "can't apply this __setattr__ to type
 * object") and tp_new_wrapper every type.__new__ of a metaclass it made
 * ("type.__new__(M2) is not safe").  So on 3.12+ a hook goes in only while
 * the main interpreter is the only one; otherwise that watch is off, with one
 * line (the replacement watch falls back to the first call's check, the
 * subclass watch to an __init_subclass__).  An interpreter started after the
 * switch makes its wrappers and metaclasses from the hooks, which pass
 * straight through there: guards belong to the main interpreter.
 *
 * The subclass watch: a class made from a guarded one (`class
 * Mine(Autotuner)`, also later) has its overrides guarded as it is made.
 * type's tp_new is hooked the same way (type's own slot and every metaclass
 * that inherited it; type.__new__ reads the slot of type at each call), so
 * that nothing is put in a guarded class's __dict__ (an __init_subclass__
 * would be seen by vars() and inspect); tg__guard_class_made (py_arm_guard.c)
 * gets each class made.  Passes through from finalization on, as the other.
 *
 * The layouts read, the same on 3.9 to 3.15 with a GIL: a type object's
 * tp_setattro is its 20th pointer-sized field and tp_new its 40th; a wrapper
 * descriptor is a PyDescr_COMMON (header, d_type, d_name, d_qualname),
 * d_base, d_wrapped.
 *
 * Everything here: an attached thread.  The hooks go in at the first guard
 * install (under the install lock, guard/guard_internal.h), before the
 * program's own threads are likely to run, and the slots' stores stay
 * plain; the hooks themselves run on any thread at once. */
#include "guard/guard_internal.h"
#include "core/log.h"
#include "core/py_attr.h"
#include "core/real_sym.h"

#include <dlfcn.h>
#include <string.h>

typedef int (*setattro_fn)(PyObject *, PyObject *, PyObject *);
typedef PyObject *(*new_fn)(PyObject *, PyObject *, PyObject *);
typedef void (*any_fn)(void);

static setattro_fn orig_setattro;
static new_fn orig_new;
static PyObject *type_type;       /* &PyType_Type */
/* type.__dict__['__setattr__'] and ['__delattr__'] (strong): both wrap
 * tp_setattro */
static const char *const wrapper_names[2] = {"__setattr__", "__delattr__"};
static PyObject *wrappers[2];
static PyObject *subclasses_of;   /* type.__subclasses__, unbound (strong) */

/* A type object's slots, as pointer-sized fields after its object header
 * (core/py_api.h tg_py_field): tp_setattro at 152 with a GIL, 168
 * free-threaded; tp_new at 312, 328. */
#define TG_SLOT_SETATTRO 17
#define TG_SLOT_NEW 37

/* The slot at pointer-sized field `index` after a type object's header. */
static inline any_fn *slot_at(PyObject *type, int index)
{
    return (any_fn *)tg_py_field(type, (size_t)index);
}

static inline setattro_fn *slot_of(PyObject *type)
{
    return (setattro_fn *)(void *)slot_at(type, TG_SLOT_SETATTRO);
}

static inline setattro_fn *wrapped_of(PyObject *wrapper)
{
    /* PyDescr_COMMON (d_type, d_name, d_qualname), d_base, then d_wrapped:
     * 48 with a GIL, 64 free-threaded */
    return (setattro_fn *)tg_py_field(wrapper, 4);
}

/* Set when the interpreter finalizes: the hooks pass straight through. */
static int finalizing;
/* The main interpreter (PyInterpreterState *), where the hooks went in. */
static void *main_interp;

/* Is the calling thread's interpreter the main one (the hooks' business)? */
static int in_main(void)
{
    return !tg_py.PyInterpreterState_Get || tg_py.PyInterpreterState_Get() == main_interp;
}

/* 3.12+: does an interpreter other than the main one exist (see the head
 * comment)?  Interpreters are listed newest first, the main one last: one
 * load of the list's head, nothing of another interpreter is read.  Unknown
 * counts as yes.  Yes says so in one line at verbosity 1: "<what> through
 * type's slots: ...". */
static int others_exist(const char *what)
{
    if (tg_py.minor < 12)
        return 0; /* one type.__dict__ and one __subclasses__() for all */
    if (tg_py.PyInterpreterState_Head && tg_py.PyInterpreterState_Main &&
        tg_py.PyInterpreterState_Head() == tg_py.PyInterpreterState_Main())
        return 0;
    tg__info(1, "%s through type's slots: other interpreters exist, each with its own view of them "
                "(changing them would break type.__setattr__ and type.__new__ there)", what);
    return 1;
}

static int hook(PyObject *cls, PyObject *name, PyObject *value)
{
    int rc = orig_setattro(cls, name, value);
    if (rc == 0 && value && !finalizing && in_main())
        tg__guard_class_setattr(cls, name, value);
    return rc;
}

int tg__type_setattr(PyObject *cls, PyObject *name, PyObject *value)
{
    tg__guard_watch_setattr(); /* learns type's own slot */
    return orig_setattro ? orig_setattro(cls, name, value) : tg_py.PyObject_SetAttr(cls, name, value);
}

/* type(name, bases, namespace) made a class: handed on.  Any other call
 * (type(x), a failure) is type's own business. */
static PyObject *new_hook(PyObject *meta, PyObject *args, PyObject *kwds)
{
    PyObject *made = orig_new(meta, args, kwds);
    if (made && !finalizing && args && tg_py.PyTuple_Size(args) == 3 && in_main()) {
        /* A metaclass's __new__ that type.__new__ handed the call to may
         * return anything: only a class is looked at. */
        PyObject *mt = tg_py.PyObject_Type(made);
        if (mt && tg_py.PyType_IsSubtype(mt, type_type))
            tg__guard_class_made(made);
        if (mt)
            tg_py.Py_DecRef(mt);
    }
    return made;
}

/* Every metaclass under t (t included) whose slot `index` is `from` gets
 * `to`.  type.__subclasses__(t): the metaclasses made from t, directly. */
static void retarget(PyObject *t, int index, any_fn from, any_fn to, int depth)
{
    if (*slot_at(t, index) == from)
        *slot_at(t, index) = to;
    if (depth > 32)
        return;
    PyObject *subs = tg_py.PyObject_CallFunctionObjArgs(subclasses_of, t, NULL);
    if (!subs) {
        tg_py.PyErr_Clear();
        return;
    }
    for (Py_ssize_t i = 0, n = tg_py.PyList_Size(subs); i < n; i++)
        retarget(tg_py.PyList_GetItem(subs, i), index, from, to, depth + 1);
    tg_py.Py_DecRef(subs);
}

static void switch_all(setattro_fn from, setattro_fn to)
{
    retarget(type_type, TG_SLOT_SETATTRO, (any_fn)from, (any_fn)to, 0);
    for (int i = 0; i < 2; i++)
        if (*wrapped_of(wrappers[i]) == from)
            *wrapped_of(wrappers[i]) = to;
}

void tg__guard_unwatch_setattr(void)
{
    /* Nothing is put back: that walks every metaclass through
     * type.__subclasses__(), Python code, and Python code run this late
     * (after the modules are cleared) corrupts 3.13's dict free list: the
     * interpreter crashes at exit (a program with an audit hook of its own
     * and a file left open).  The hooks stay in place, one function
     * everywhere as hackcheck wants, and only call the originals. */
    finalizing = 1;
}

int tg__guard_watch_new(void)
{
    static int done, on;
    if (done++)
        return on;
    tg__guard_watch_setattr(); /* type and type.__subclasses__ */
    if (!type_type || !subclasses_of)
        return 0;
    orig_new = *(new_fn *)(void *)slot_at(type_type, TG_SLOT_NEW);
    if (!orig_new) {
        tg__info(1, "cannot watch classes as they are made: type has no tp_new");
        return 0;
    }
    if (others_exist("classes made later are watched through an __init_subclass__, not")) {
        orig_new = NULL;
        return 0;
    }
    retarget(type_type, TG_SLOT_NEW, (any_fn)orig_new, (any_fn)new_hook, 0);
    on = 1;
    return 1;
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
    type_type = tg_real_sym(RTLD_DEFAULT, "PyType_Type");
    if (!type_type) {
        (void)dlerror();
        return;
    }
    orig_setattro = *slot_of(type_type);
    main_interp = tg_py.PyInterpreterState_Get ? tg_py.PyInterpreterState_Get() : NULL;
    if (orig_setattro && others_exist("a guarded method replaced by the program is guarded at its first call "
                                      "through the original, and classes made later are watched through an "
                                      "__init_subclass__, not")) {
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
    subclasses_of = tg_py.PyObject_GetAttrString(type_type, "__subclasses__");
    tg_py.PyErr_Clear();
    if (orig_setattro && wrappers_ok && subclasses_of) {
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
