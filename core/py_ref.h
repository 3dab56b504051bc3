/* Look-ups that return a strong reference: dict[key], list[i] and a weak
 * reference's object.  The borrowed-reference calls (PyDict_GetItem,
 * PyDict_GetItemString, PyList_GetItem, PyWeakref_GetObject) leave the item
 * to its container; in a free-threaded build another thread may remove it
 * and free it while the caller reads it.  Where CPython exports the strong
 * forms (3.13+: PyDict_GetItemRef, PyDict_GetItemStringRef,
 * PyList_GetItemRef, PyWeakref_GetRef; optional rows of py_api.inc) they are
 * used; elsewhere (3.9-3.12, each with a GIL) the borrowed call and
 * Py_IncRef, which the GIL makes one step.
 *
 * All: GIL held (an attached thread state); the result is a new reference
 * the caller drops, or NULL (missing, dead, not of the type, an error: the
 * error cleared, none set).  Callable once tg_py_resolve_guards has
 * returned 0. */
#ifndef TG_PY_REF_H
#define TG_PY_REF_H

#include "core/py_api.h"

static inline PyObject *tg_py_strong(PyObject *borrowed)
{
    if (borrowed)
        tg_py.Py_IncRef(borrowed);
    return borrowed;
}

/* dict[key]; dict may be NULL. */
static inline PyObject *tg_py_dict_get(PyObject *dict, PyObject *key)
{
    PyObject *v = NULL;
    if (!dict || !key)
        return NULL;
    if (!tg_py.PyDict_GetItemRef)
        return tg_py_strong(tg_py.PyDict_GetItem(dict, key));
    if (tg_py.PyDict_GetItemRef(dict, key, &v) < 0)
        tg_py.PyErr_Clear();
    return v;
}

/* dict[key] for a str key; dict may be NULL. */
static inline PyObject *tg_py_dict_get_str(PyObject *dict, const char *key)
{
    PyObject *v = NULL;
    if (!dict)
        return NULL;
    if (!tg_py.PyDict_GetItemStringRef)
        return tg_py_strong(tg_py.PyDict_GetItemString(dict, key));
    if (tg_py.PyDict_GetItemStringRef(dict, key, &v) < 0)
        tg_py.PyErr_Clear();
    return v;
}

/* list[i], for a list others may change (sys.path); list may be NULL. */
static inline PyObject *tg_py_list_get(PyObject *list, Py_ssize_t i)
{
    if (!list)
        return NULL;
    PyObject *v = tg_py.PyList_GetItemRef ? tg_py.PyList_GetItemRef(list, i) : tg_py_strong(tg_py.PyList_GetItem(list, i));
    if (!v)
        tg_py.PyErr_Clear();
    return v;
}

/* The object a weak reference refers to, NULL once it is dead (where
 * PyWeakref_GetObject gives None). */
static inline PyObject *tg_py_weakref_get(PyObject *ref)
{
    PyObject *v = NULL;
    if (!ref)
        return NULL;
    if (!tg_py.PyWeakref_GetRef) {
        v = tg_py.PyWeakref_GetObject(ref);
        if (!v)
            tg_py.PyErr_Clear();
        return v == tg_py.none ? NULL : tg_py_strong(v);
    }
    if (tg_py.PyWeakref_GetRef(ref, &v) < 0)
        tg_py.PyErr_Clear();
    return v;
}

#endif
