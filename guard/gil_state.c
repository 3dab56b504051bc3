/* Whether the GIL is on (guard/gil_state.h). */
#include "guard/gil_state.h"
#include "core/py_attr.h"

int tg__gil_state = -1;

/* sys._is_gil_enabled, looked up once and kept (a builtin of the sys module
 * that lives as long as the interpreter); NULL until looked up. */
static PyObject *is_gil_enabled;

int tg__gil_refresh(void)
{
    if (!tg_py.free_threaded) {
        __atomic_store_n(&tg__gil_state, 1, __ATOMIC_RELAXED);
        return 1;
    }
    PyObject *fn = __atomic_load_n(&is_gil_enabled, __ATOMIC_ACQUIRE);
    if (!fn) {
        PyObject *sys = tg_py.PyImport_AddModule("sys"); /* borrowed */
        fn = sys ? tg_py.PyObject_GetAttrString(sys, "_is_gil_enabled") : NULL;
        PyObject *none = NULL;
        if (fn && !__atomic_compare_exchange_n(&is_gil_enabled, &none, fn, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            tg_py.Py_DecRef(fn); /* another thread kept its own */
            fn = none;
        }
    }
    int on = 1;
    PyObject *r = fn && tg_py.PyObject_IsTrue ? tg_py.PyObject_CallObject(fn, NULL) : NULL;
    if (r) {
        on = tg_py.PyObject_IsTrue(r) != 0; /* a bool: cannot fail */
        tg_py.Py_DecRef(r);
    }
    tg_py_drop_error();
    __atomic_store_n(&tg__gil_state, on, __ATOMIC_RELAXED);
    return on;
}
