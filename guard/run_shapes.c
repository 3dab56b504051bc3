/* A tuner subclass's entry point that is not a plain function in its own
 * __dict__ (guard_install.c guards those): what a call of `inst.run(...)`
 * runs is found through the class's MRO and guarded there, or one line says
 * which class's entry point runs unguarded and why.
 *
 *   run from a mixin that is no tuner (`class T(Mixin, Autotuner)`): the
 *       mixin's function is guarded, for the tuner family's instances only
 *       (a call on another class's instance passes through: the mixin's
 *       other users are no tuners)
 *   run = functools.partialmethod(f, ...): f is guarded, the function the
 *       partialmethod's binding calls with the instance first (3.11: a
 *       method descriptor guard put in as the partialmethod's func)
 *   a property, staticmethod, classmethod or another descriptor: what its
 *       __get__ returns is decided at each access, and a staticmethod or
 *       classmethod has no instance to hold a session on: one line, once
 *       per class
 *   run set on a tuner instance (`tuner.run = ...`, which shadows the
 *       class's guarded run): nothing tells tunerguard of an instance
 *       attribute (hooking the tuner classes' tp_setattro would make
 *       object.__setattr__ refuse their instances on 3.12+, hackcheck), so
 *       it is found when a tuning method (_bench, ...) runs on the
 *       instance outside any guarded call on it.  A bound method of the
 *       instance, or a functools.partial with the instance first: the
 *       function it calls is guarded from then on, in its vectorcall slot
 *       (not on 3.11: no class to put a descriptor on).  One line, once per
 *       class, says which, or that its calls run unguarded
 *
 * Everything here: an attached thread, busy, under the install lock
 * (tg__install_lock: the said-once lists, the target table, the installs):
 * at arming, where guard_family_methods holds it, and when a tuning method
 * runs outside a guarded call (tg__guard_tuning_outside takes it). */
#include "guard/guard_internal.h"
#include "loader/py_arm_internal.h"
#include "core/log.h"
#include "core/py_attr.h"
#include "core/py_ref.h"

#include <stdio.h>
#include <string.h>

static int is_plain_function(const char *tname)
{
    return strcmp(tname, "function") == 0 || strcmp(tname, "cython_function_or_method") == 0;
}

/* value's type's name into tname (64 bytes; "" when there is none). */
static void type_name(PyObject *value, char tname[64])
{
    PyObject *type = tg_py.PyObject_Type(value);
    tname[0] = '\0';
    tg_py_attr_str(type, "__name__", tname, 64);
    if (type)
        tg_py.Py_DecRef(type);
}

/* The first class in cls's MRO whose own __dict__ holds `name`, and what it
 * holds (both new references), tname its type's name; 0, or -1 when none
 * has it.  No error left set. */
static int lookup(PyObject *cls, PyObject *key, PyObject **owner, PyObject **value, char tname[64])
{
    PyObject *mro = tg_py.PyObject_GetAttrString(cls, "__mro__");
    Py_ssize_t n = mro ? tg_py.PyTuple_Size(mro) : 0;
    *owner = *value = NULL;
    for (Py_ssize_t i = 0; i < n && !*value; i++) {
        PyObject *c = tg_py.PyTuple_GetItem(mro, i); /* borrowed */
        PyObject *dict = c ? tg_py.PyObject_GetAttrString(c, "__dict__") : NULL;
        PyObject *v = dict ? tg_py.PyObject_GetItem(dict, key) : NULL; /* a mappingproxy */
        tg_py.PyErr_Clear();
        if (dict)
            tg_py.Py_DecRef(dict);
        if (v) {
            *owner = c;
            tg_py.Py_IncRef(c);
            *value = v;
        }
    }
    if (mro)
        tg_py.Py_DecRef(mro);
    tg_py.PyErr_Clear();
    tname[0] = '\0';
    if (!*value)
        return -1;
    type_name(*value, tname);
    return 0;
}

/* Was cls's unguarded entry said already?  Notes it if not.  Identity only:
 * a class freed and another made at its address goes unsaid. */
static int said_for(PyObject *cls)
{
    static const void *said[64];
    static unsigned nsaid;
    for (unsigned i = 0; i < nsaid && i < 64; i++)
        if (said[i] == cls)
            return 1;
    said[nsaid++ % 64] = cls;
    return 0;
}

/* One line, once per class that holds it (owner: its subclasses made by the
 * thousand say nothing more): cls.<name> (held by owner as a `tname`) runs
 * unguarded, and why. */
static void say_unguarded(PyObject *cls, PyObject *owner, const char *name, const char *tname, const char *why)
{
    if (said_for(owner))
        return;
    char mod[96], qual[160], omod[96], oqual[160], from[280] = "";
    tg_py_attr_str(cls, "__module__", mod, sizeof mod);
    tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
    if (owner != cls) {
        tg_py_attr_str(owner, "__module__", omod, sizeof omod);
        tg_py_attr_str(owner, "__qualname__", oqual, sizeof oqual);
        snprintf(from, sizeof from, " (from %s.%s)", omod, oqual);
    }
    tg__warn("%s.%s.%s is a %s%s, not a function: %s; calls of %s.%s run unguarded (define %s as a method that "
             "calls what it runs)", mod, qual, name, tname[0] ? tname : "?", from, why, qual, name, name);
}

/* Is owner one of the tuner family (base or a subclass of it)? */
static int in_family(PyObject *owner, PyObject *base)
{
    return owner == base || tg_py.PyType_IsSubtype(owner, base);
}

/* run = functools.partialmethod(f, ...) on owner: guard f.  0 guarded (or
 * ours already), -1 not a function (the caller says why). */
static int guard_partialmethod(PyObject *owner, PyObject *base, PyObject *pm, const char *name, int declared)
{
    PyObject *func = tg_py.PyObject_GetAttrString(pm, "func");
    tg_py.PyErr_Clear();
    if (!func)
        return -1;
    int rc = -1;
    char tname[64];
    type_name(func, tname);
    if (tg_guard_is_ours(func)) {
        rc = 0;
    } else if (is_plain_function(tname)) {
        struct tg_guard_at at = {.value = func, .holder = pm, .family = in_family(owner, base) ? NULL : base};
        tg__guard_install_at(owner, name, "the function of its partialmethod", declared, &at);
        rc = 0; /* refused: install said why where a line is due (an async def) */
    }
    tg_py.Py_DecRef(func);
    tg_py.PyErr_Clear();
    return rc;
}

void tg__guard_run_shape(PyObject *cls, PyObject *base, const char *name, int declared)
{
    if (cls == base)
        return; /* the target class itself: arming says what it lacks (targets=) */
    PyObject *key = tg_py.PyUnicode_FromString(name);
    PyObject *owner, *value;
    char tname[64];
    if (!key || lookup(cls, key, &owner, &value, tname) < 0) {
        if (key)
            tg_py.Py_DecRef(key);
        tg_py.PyErr_Clear();
        return;
    }
    tg_py.Py_DecRef(key);
    if (owner == base || tg_guard_is_ours(value)) {
        /* guarded on the class that defines it, or the target class's own
         * attribute, which arming and the replacement watch look after */
    } else if (is_plain_function(tname)) {
        /* A tuner's own function that is not ours was refused at its install,
         * which said why where a line is due; a mixin's is guarded here. */
        if (!in_family(owner, base)) {
            struct tg_guard_at at = {.family = base};
            tg__guard_install_at(owner, name, "a mixin's, for the tuners that inherit it", declared, &at);
        }
    } else if (strcmp(tname, "partialmethod") == 0) {
        if (guard_partialmethod(owner, base, value, name, declared) < 0)
            say_unguarded(cls, owner, name, tname, "its func is no plain function");
    } else if (strcmp(tname, "staticmethod") == 0 || strcmp(tname, "classmethod") == 0) {
        say_unguarded(cls, owner, name, tname, "its calls get no tuner instance to hold a session on");
    } else if (strcmp(tname, "property") == 0) {
        say_unguarded(cls, owner, name, tname, "what a call runs is what its getter returns at each access");
    } else if (tg_py.PyObject_HasAttrString(value, "__get__")) {
        say_unguarded(cls, owner, name, tname, "what a call runs is what its __get__ returns at each access");
    } else {
        say_unguarded(cls, owner, name, tname, "it is called without the tuner instance");
    }
    tg_py.Py_DecRef(value);
    tg_py.Py_DecRef(owner);
    tg_py.PyErr_Clear();
}

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
    type_name(v, tname);
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
        type_name(fn, tname);
        if (!is_plain_function(tname)) {
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
    if (said_for(type))
        return;
    char mod[96], qual[160], tname[64];
    tg_py_attr_str(type, "__module__", mod, sizeof mod);
    tg_py_attr_str(type, "__qualname__", qual, sizeof qual);
    type_name(v, tname);
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
