/* The fixed-offset reads of core/py_api.h (tg_py_type_of, tg_py_field), on
 * fake objects, against the offsets offsetof gives compiled against the
 * headers (64-bit): pyenv's 3.13.0 with a GIL, the free-threaded 3.13.5 of
 * tools/dev py313t, and Debian sid's 3.14.10 with and without
 * Py_GIL_DISABLED (docs/free-threading.md's table).  The indexes are the
 * ones guard/ passes. */
#include <criterion/criterion.h>

#include "core/py_api.h"

static void *obj[64];

static size_t byte_of(void *field)
{
    return (size_t)((char *)field - (char *)obj);
}

Test(py_layout, with_a_gil)
{
    tg_py.free_threaded = 0;
    cr_assert_eq(sizeof(void *), 8);
    cr_expect_eq(tg_py_header_words(), 2);
    obj[1] = (void *)0x1234;
    cr_expect_eq((void *)tg_py_type_of((PyObject *)obj), (void *)0x1234, "ob_type at 8");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 0)), 16, "ob_size");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 2)), 32, "tp_basicsize");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 5)), 56, "tp_vectorcall_offset");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 17)), 152, "tp_setattro");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 37)), 312, "tp_new");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 3)), 40, "d_method");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 4)), 48, "d_wrapped");
}

Test(py_layout, free_threaded)
{
    tg_py.free_threaded = 1;
    cr_expect_eq(tg_py_header_words(), 4);
    obj[1] = (void *)0x1;
    obj[3] = (void *)0x5678;
    cr_expect_eq((void *)tg_py_type_of((PyObject *)obj), (void *)0x5678, "ob_type at 24");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 0)), 32, "ob_size");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 2)), 48, "tp_basicsize");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 5)), 72, "tp_vectorcall_offset");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 17)), 168, "tp_setattro");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 37)), 328, "tp_new");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 3)), 56, "d_method");
    cr_expect_eq(byte_of(tg_py_field((PyObject *)obj, 4)), 64, "d_wrapped");
    tg_py.free_threaded = 0;
}
