/* core/py_ref.h: each look-up returns a strong reference, through the
 * strong form where it is resolved (3.13+) and through the borrowed call and
 * Py_IncRef elsewhere; NULL for a missing item or a dead weak reference,
 * with the error a strong form set cleared.  The API is fakes that count. */
#include <criterion/criterion.h>

#include "core/py_ref.h"

static int obj_value, none_value;
static int increfs, clears, strong_calls, borrowed_calls;

static void fake_incref(PyObject *o)
{
    (void)o;
    increfs++;
}
static void fake_clear(void)
{
    clears++;
}
/* key "present" (or the key object &obj_value) is there, the rest is not */
static PyObject *b_dict(PyObject *d, PyObject *k)
{
    borrowed_calls++;
    return k == (PyObject *)(void *)&obj_value ? (PyObject *)(void *)&obj_value : NULL;
}
static PyObject *b_dict_str(PyObject *d, const char *k)
{
    borrowed_calls++;
    return k[0] == 'p' ? (PyObject *)(void *)&obj_value : NULL;
}
static PyObject *b_list(PyObject *l, Py_ssize_t i)
{
    borrowed_calls++;
    return i == 0 ? (PyObject *)(void *)&obj_value : NULL; /* IndexError set */
}
static PyObject *b_weak(PyObject *r)
{
    borrowed_calls++;
    return r == (PyObject *)(void *)&obj_value ? (PyObject *)(void *)&obj_value : (PyObject *)(void *)&none_value;
}
static int s_dict(PyObject *d, PyObject *k, PyObject **res)
{
    strong_calls++;
    *res = k == (PyObject *)(void *)&obj_value ? (increfs++, (PyObject *)(void *)&obj_value) : NULL;
    return *res ? 1 : 0;
}
static int s_dict_str(PyObject *d, const char *k, PyObject **res)
{
    strong_calls++;
    *res = k[0] == 'p' ? (increfs++, (PyObject *)(void *)&obj_value) : NULL;
    return *res ? 1 : k[0] == 'e' ? -1 : 0;
}
static PyObject *s_list(PyObject *l, Py_ssize_t i)
{
    strong_calls++;
    return i == 0 ? (increfs++, (PyObject *)(void *)&obj_value) : NULL;
}
static int s_weak(PyObject *r, PyObject **res)
{
    strong_calls++;
    *res = r == (PyObject *)(void *)&obj_value ? (increfs++, (PyObject *)(void *)&obj_value) : NULL;
    return *res ? 1 : 0;
}

static void api(int strong)
{
    tg_py.Py_IncRef = fake_incref;
    tg_py.PyErr_Clear = fake_clear;
    tg_py.none = (PyObject *)(void *)&none_value;
    tg_py.PyDict_GetItem = b_dict;
    tg_py.PyDict_GetItemString = b_dict_str;
    tg_py.PyList_GetItem = b_list;
    tg_py.PyWeakref_GetObject = b_weak;
    tg_py.PyDict_GetItemRef = strong ? s_dict : NULL;
    tg_py.PyDict_GetItemStringRef = strong ? s_dict_str : NULL;
    tg_py.PyList_GetItemRef = strong ? s_list : NULL;
    tg_py.PyWeakref_GetRef = strong ? s_weak : NULL;
    increfs = clears = strong_calls = borrowed_calls = 0;
}

static void each(int strong)
{
    PyObject *d = (PyObject *)(void *)&none_value, *o = (PyObject *)(void *)&obj_value;
    api(strong);
    cr_expect_eq(tg_py_dict_get(d, o), o);
    cr_expect_null(tg_py_dict_get(d, d));
    cr_expect_null(tg_py_dict_get(NULL, o));
    cr_expect_eq(tg_py_dict_get_str(d, "present"), o);
    cr_expect_null(tg_py_dict_get_str(d, "absent"));
    cr_expect_eq(tg_py_list_get(d, 0), o);
    cr_expect_null(tg_py_list_get(d, 5));
    cr_expect_eq(tg_py_weakref_get(o), o);
    cr_expect_null(tg_py_weakref_get(d), "a dead reference: NULL, not None");
    cr_expect_eq(increfs, 4, "one reference per object returned (strong %d)", strong);
    cr_expect_eq(strong ? borrowed_calls : strong_calls, 0, "strong %d: only its own form", strong);
    cr_expect_eq(clears, 1, "the list's IndexError only (strong %d)", strong);
}

Test(py_ref, borrowed_forms_then_incref)
{
    each(0);
}

Test(py_ref, strong_forms_where_resolved)
{
    each(1);
    api(1);
    cr_expect_null(tg_py_dict_get_str((PyObject *)(void *)&none_value, "error"));
    cr_expect_eq(clears, 1, "an error a strong form set is cleared");
}
