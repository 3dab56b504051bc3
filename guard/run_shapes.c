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
 *
 * run set on a tuner instance is found later, at a tuning method's call
 * (guard/guard_setattr.c, tg__guard_tuning_outside).
 *
 * Everything here: an attached thread, busy, under the install lock
 * (tg__install_lock: the said-once lists, the target table, the installs):
 * at arming, where tg__guard_family_methods holds it. */
#include "guard/install_internal.h"
#include "core/log.h"
#include "core/py_attr.h"

#include <stdio.h>
#include <string.h>

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
    tg__type_name(*value, tname);
    return 0;
}

/* One line, once per class that holds it (owner: its subclasses made by the
 * thousand say nothing more): cls.<name> (held by owner as a `tname`) runs
 * unguarded, and why. */
static void say_unguarded(PyObject *cls, PyObject *owner, const char *name, const char *tname, const char *why)
{
    if (tg__said_for_class(owner))
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
    tg__type_name(func, tname);
    if (tg_guard_is_ours(func)) {
        rc = 0;
    } else if (tg__is_plain_function(tname)) {
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
    } else if (tg__is_plain_function(tname)) {
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
