/* A Python function's vectorcall slot, where a vectorcall guard goes
 * (guard/guard_install.c): Python's function type, learnt from the first
 * function guarded, and where its instances keep their vectorcall (the
 * type's tp_vectorcall_offset).  A type object's tp_vectorcall_offset
 * follows the object header, ob_size, tp_name, tp_basicsize, tp_itemsize
 * and tp_dealloc (core/py_api.h tg_py_field: 56 with a GIL, 72
 * free-threaded).
 *
 * Attached; tg__vc_usable and tg__vc_install under the install lock,
 * tg__vc_slot_of from any thread (function_type published by a release
 * store after vc_offset). */
#include "guard/install_internal.h"

static PyObject *function_type; /* borrowed: a static type; release store after vc_offset */
static Py_ssize_t vc_offset;

static inline void **vc_slot(PyObject *func)
{
    return (void **)(void *)((char *)func + vc_offset);
}

void **tg__vc_slot_of(PyObject *value)
{
    PyObject *ft = __atomic_load_n(&function_type, __ATOMIC_ACQUIRE);
    return ft && tg_py_type_of(value) == ft ? vc_slot(value) : NULL;
}

int tg__vc_usable(PyObject *value)
{
    if (tg_py.minor == 11 || tg_py.minor < 9)
        return 0;
    if (!function_type) {
        PyObject *type = tg_py_type_of(value);
        Py_ssize_t off = *(Py_ssize_t *)tg_py_field(type, 5);   /* tp_vectorcall_offset */
        Py_ssize_t basic = *(Py_ssize_t *)tg_py_field(type, 2); /* tp_basicsize */
        if (off <= 0 || off + (Py_ssize_t)sizeof(void *) > basic)
            return 0;
        vc_offset = off;
        __atomic_store_n(&function_type, type, __ATOMIC_RELEASE);
    }
    return tg_py_type_of(value) == function_type && *vc_slot(value) != NULL;
}

/* 3.12+ through PyFunction_SetVectorcall, which also drops the function's
 * version, so that the specializing interpreter never inlines it; 3.9/3.10
 * (no specializer) write the slot.  Another thread may be calling func at
 * this moment (a guard installed as a class is made): the guard's fields
 * are ordered before the trampoline by a release fence, and the trampoline
 * goes in with a release store.  A free-threaded build's
 * PyFunction_SetVectorcall is a plain store (3.13t, 3.14t): there it drops
 * the version with the slot's own value stored back (no change a caller
 * can see), and only the release store puts the trampoline in; a caller
 * loads the old pointer or the new one, whole, both valid, and the
 * trampoline's acquire fence (session.c tg__guard_vcall) orders that load
 * before its reads of the guard. */
void tg__vc_install(void **orig_vc, PyObject *func, void *trampoline)
{
    void *orig = __atomic_load_n(vc_slot(func), __ATOMIC_RELAXED);
    __atomic_store_n(orig_vc, orig, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    if (tg_py.PyFunction_SetVectorcall)
        tg_py.PyFunction_SetVectorcall(func, tg_py.free_threaded ? orig : trampoline);
    __atomic_store_n(vc_slot(func), trampoline, __ATOMIC_RELEASE);
}
