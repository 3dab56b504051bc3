/* Marking tuning methods: the built-in tuners' (Autotuner._bench,
 * prune_configs, ...; core/builtin_tuners.inc) on a target class, and the
 * steps tuning= names on a declared tuner and on its subclasses.  A call of
 * a marked method counts its thread as tuning, with no session of its own
 * (guard/session.c, marker_call); each class marked is noted
 * (marked_classes.c) for the entry points that derive from it.
 *
 * Everything here: an attached thread, busy (arming); the two entry
 * points take the install lock (tg__install_lock: the seen list, the
 * marked classes, the installs). */
#include "guard/install_internal.h"
#include "core/builtin_tuners.h"
#include "core/log.h"
#include "core/options.h"
#include "core/py_attr.h"

#include <stdio.h>
#include <string.h>

static void install_markers_locked(PyObject *cls);
void tg_guard_install_markers(PyObject *cls)
{
    tg__install_lock();
    install_markers_locked(cls);
    tg__install_unlock();
}

static void install_markers_locked(PyObject *cls)
{
    static PyObject *seen[16]; /* classes already marked (run and warmup share one) */
    static int nseen;
    for (int i = 0; i < nseen; i++)
        if (seen[i] == cls)
            return;
    if (nseen < (int)(sizeof seen / sizeof seen[0]))
        seen[nseen++] = cls; /* borrowed: the target table keeps the class alive */
    /* The tuning methods of the built-in tuners (core/builtin_tuners.inc): a
     * thread inside one is tuning.  Names a class lacks are skipped (another
     * version, another tuner). */
    int marked = 0;
    const char *step;
    for (int i = 0; (step = tg_tuner_step(i)) != NULL; i++)
        marked += tg__guard_install_marker(cls, step, "tuning method", 0) > 0;
    if (marked > 0)
        tg__marked_class_add(cls, 0);
    if (marked == 0) {
        /* Another Autotuner than the ones tunerguard knows (a Triton version
         * whose tuning methods have other names): it is guarded and
         * serialized all the same; only severity loses its Python evidence. */
        char qual[96], mod[96], known[200] = "";
        tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
        tg_py_attr_str(cls, "__module__", mod, sizeof mod);
        for (int i = 0; (step = tg_tuner_step(i)) != NULL; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", step);
        tg__info(1, "%s.%s has none of the tuning methods tunerguard knows (%s): an unknown version; it is "
                    "guarded and serialized as usual, and a race's severity comes from the CUDA calls alone",
                 mod, qual, known);
    }
}

/* Is cls.<name> a guard of ours already?  The install lock held. */
static int guarded_already(PyObject *cls, const char *name)
{
    PyObject *v = tg_py.PyObject_GetAttrString(cls, name);
    int yes = v && tg_guard_is_ours(v);
    if (v)
        tg_py.Py_DecRef(v);
    tg_py.PyErr_Clear();
    return yes;
}

/* The class in cls's MRO whose own dict holds `method`, when that is a
 * base of cls's (cls does not define it itself) and the method a plain
 * function; a new reference, else NULL.  The install lock held; install
 * time only. */
static PyObject *inherited_from(PyObject *cls, const char *method)
{
    PyObject *mro = tg_py.PyObject_GetAttrString(cls, "__mro__");
    PyObject *key = tg_py.PyUnicode_FromString(method);
    Py_ssize_t n = mro && key ? tg_py.PyTuple_Size(mro) : 0;
    PyObject *found = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = tg_py.PyTuple_GetItem(mro, i); /* borrowed */
        char tname[64];
        PyObject *v = c ? tg__own_attr(c, key, tname) : NULL;
        if (!v)
            continue;
        tg_py.Py_DecRef(v);
        if (i > 0 && strcmp(tname, "function") == 0) {
            found = c;
            tg_py.Py_IncRef(found);
        }
        break; /* the first class that has it decides */
    }
    if (mro)
        tg_py.Py_DecRef(mro);
    if (key)
        tg_py.Py_DecRef(key);
    tg_py.PyErr_Clear();
    return found;
}

/* cls has no plain function `method` for the tuning= entry (entry, len)
 * of the class qualname: one line for that class; for its subclasses (an
 * override that is a staticmethod, say), one line for the first only,
 * since a program may make them by the thousand.  The install lock held. */
static void say_no_step(PyObject *cls, const char *qualname, const char *method, const char *entry, size_t len)
{
    char qual[160], mod[96];
    tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
    tg_py_attr_str(cls, "__module__", mod, sizeof mod);
    static unsigned said_subclass;
    if (strcmp(qual, qualname) == 0)
        tg__warn("tuning=%.*s: class %s has no plain method %s; its overlaps are races whatever the threads "
                 "inside do", (int)len, entry, qualname, method);
    else
        tg__say_capped(&said_subclass, 1, 0,
                       "tuning=%.*s: %s.%s.%s, a subclass's, is no plain method: calls on its instances are never in "
                       "their step, so their overlaps are counted, not reported (later such subclasses are not "
                       "named)", (int)len, entry, mod, qual, method);
}

static void install_tuning_steps_locked(PyObject *cls, const char *module, const char *qualname);
void tg_guard_install_tuning_steps(PyObject *cls, const char *module, const char *qualname)
{
    tg__install_lock();
    install_tuning_steps_locked(cls, module, qualname);
    tg__install_unlock();
}

static void install_tuning_steps_locked(PyObject *cls, const char *module, const char *qualname)
{
    size_t ml = strlen(module), ql = strlen(qualname);
    int marked = 0;
    struct tg_target_span step;
    for (const char *p = tg_opts.tuning; tg_target_next(&p, &step);) {
        /* "module:qualname.method": this class's entries only */
        if (step.colon && step.dot && (size_t)(step.colon - step.text) == ml && memcmp(step.text, module, ml) == 0 &&
            (size_t)(step.dot - step.colon - 1) == ql && memcmp(step.colon + 1, qualname, ql) == 0) {
            char method[TG_TARGET_METHOD_MAX + 1];
            snprintf(method, sizeof method, "%.*s", (int)(step.text + step.len - step.dot - 1), step.dot + 1);
            /* declared: its entry is checked */
            int r = tg__guard_install_marker(cls, method, "tuning step (tuning=)", 1);
            PyObject *base = r == 0 && !guarded_already(cls, method) ? inherited_from(cls, method) : NULL;
            if (base) { /* the step a base defines: marked there, for every class that inherits it */
                r = tg__guard_install_marker(base, method, "tuning step (tuning=), inherited", 1);
                tg_py.Py_DecRef(base);
            }
            if (r > 0)
                marked++;
            else if (r == 0 && !guarded_already(cls, method)) /* -1: install said why */
                say_no_step(cls, qualname, method, step.text, step.len);
        }
    }
    if (marked > 0)
        tg__marked_class_add(cls, 1);
}
