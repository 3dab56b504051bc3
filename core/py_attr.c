/* Python attribute readers shared by the report writers; see core/py_attr.h. */
#include "core/py_attr.h"
#include "core/thread_state.h"

#include <stdio.h>

void tg_py_drop_error(void)
{
    if (!tg_py.PyErr_Occurred) { /* before the guards' functions: nothing of ours ran in a call */
        tg_py.PyErr_Clear();
        return;
    }
    if (!tg_py.PyErr_Occurred())
        return;
    struct tg_thread *t = tg__self();
    if (t->guard_frames > 0 && !t->kept_exc[0] && tg_py.exc_exception && tg_py.PyErr_ExceptionMatches &&
        !tg_py.PyErr_ExceptionMatches(tg_py.exc_exception)) {
        PyObject *type, *value, *tb;
        tg_py.PyErr_Fetch(&type, &value, &tb);
        t->kept_exc[0] = type;
        t->kept_exc[1] = value;
        t->kept_exc[2] = tb;
        return;
    }
    tg_py.PyErr_Clear();
}

PyObject *tg_py_raise_kept(struct tg_thread *t, PyObject *res)
{
    if (res)
        tg_py.Py_DecRef(res);
    PyObject *type = t->kept_exc[0], *value = t->kept_exc[1], *tb = t->kept_exc[2];
    t->kept_exc[0] = t->kept_exc[1] = t->kept_exc[2] = NULL;
    tg_py.PyErr_Restore(type, value, tb); /* steals the three; drops an error set before */
    return NULL;
}

void tg_py_attr_str(PyObject *obj, const char *attr, char *dst, size_t len)
{
    dst[0] = '\0';
    PyObject *v = obj ? tg_py.PyObject_GetAttrString(obj, attr) : NULL;
    const char *s = v ? tg_py.PyUnicode_AsUTF8(v) : NULL;
    if (s)
        snprintf(dst, len, "%s", s);
    if (v)
        tg_py.Py_DecRef(v);
    tg_py_drop_error();
}

void tg_py_attr_text(PyObject *obj, const char *attr, char *dst, size_t len)
{
    dst[0] = '\0';
    PyObject *v = obj ? tg_py.PyObject_GetAttrString(obj, attr) : NULL;
    PyObject *s = (v && v != tg_py.none) ? tg_py.PyObject_Str(v) : NULL;
    const char *c = s ? tg_py.PyUnicode_AsUTF8(s) : NULL;
    if (c)
        snprintf(dst, len, "%s", c);
    if (s)
        tg_py.Py_DecRef(s);
    if (v)
        tg_py.Py_DecRef(v);
    tg_py_drop_error();
}

void tg_py_kernel_name(PyObject *inst, char *dst, size_t len)
{
    static const char *const paths[][2] = {{"base_fn", NULL}, {"fn", NULL}, {"fn", "fn"}};
    dst[0] = '\0';
    for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !dst[0]; i++) {
        PyObject *a = tg_py.PyObject_GetAttrString(inst, paths[i][0]);
        PyObject *b = (a && paths[i][1]) ? tg_py.PyObject_GetAttrString(a, paths[i][1]) : NULL;
        tg_py_attr_str(paths[i][1] ? b : a, "__name__", dst, len);
        if (b)
            tg_py.Py_DecRef(b);
        if (a)
            tg_py.Py_DecRef(a);
        tg_py_drop_error();
    }
    if (!dst[0])
        snprintf(dst, len, "?");
}

void tg_py_class_name(PyObject *inst, char *dst, size_t len)
{
    PyObject *type = tg_py.PyObject_Type(inst);
    char mod[96], qual[96];
    tg_py_attr_str(type, "__module__", mod, sizeof mod);
    tg_py_attr_str(type, "__qualname__", qual, sizeof qual);
    snprintf(dst, len, "%s.%s", mod, qual);
    if (type)
        tg_py.Py_DecRef(type);
}
