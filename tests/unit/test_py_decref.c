/* tg_py_decref (core/py_api.h): Py_DECREF as each CPython's header does it,
 * on fake objects (a count word, then padding), with _Py_Dealloc and
 * Py_DecRef replaced by recorders.  3.14 and 3.15 (Debian sid's 3.14.10 and
 * 3.15.2, run in the interpreter matrix) are versions it does itself: the low
 * 32 bits are the count there, a uint32_t with ob_overflow and ob_flags above
 * it. */
#include <criterion/criterion.h>

#include <stdint.h>

#include "core/py_api.h"

static PyObject *deallocated, *decref_called;

static void fake_dealloc(PyObject *o)
{
    deallocated = o;
}

static void fake_decref(PyObject *o)
{
    decref_called = o;
}

static void as_version(int minor)
{
    tg_py.minor = minor;
    tg_py.free_threaded = 0;
    tg_py._Py_Dealloc = fake_dealloc;
    tg_py.Py_DecRef = fake_decref;
    deallocated = decref_called = NULL;
}

/* One decref of an object whose header word is `word`; the word after it. */
static uint64_t decref(uint64_t word)
{
    static Py_ssize_t obj[2];
    obj[0] = (Py_ssize_t)word;
    tg_py_decref((PyObject *)(void *)obj);
    return (uint64_t)obj[0];
}

Test(py_decref, every_served_version_in_place)
{
    for (int minor = 9; minor <= 15; minor++) {
        as_version(minor);
        cr_expect_eq(decref(3), 2, "3.%d", minor);
        cr_expect_null(deallocated, "3.%d", minor);
        cr_expect_eq(decref(1), 0, "3.%d", minor);
        cr_expect_not_null(deallocated, "3.%d: the last reference deallocates", minor);
        cr_expect_null(decref_called, "3.%d: Py_DecRef is not called", minor);
    }
}

Test(py_decref, immortal_from_3_12)
{
    static const uint64_t immortal[] = {
        0x00000000ffffffffull, /* 3.12/3.13: _Py_IMMORTAL_REFCNT */
        0x00050000c0000000ull, /* 3.14/3.15: None as 3.14.10 and 3.15.2 have it (static flag, 3 << 30) */
        0x00000000c0000001ull, /* 3.14/3.15: an immortal whose count moved */
    };
    for (int minor = 12; minor <= 15; minor++)
        for (size_t i = 0; i < sizeof immortal / sizeof immortal[0]; i++) {
            as_version(minor);
            cr_expect_eq(decref(immortal[i]), immortal[i], "3.%d: %#llx", minor, (unsigned long long)immortal[i]);
            cr_expect_null(deallocated);
            cr_expect_null(decref_called);
        }
}

Test(py_decref, v3_14_counts_the_low_half)
{
    for (int minor = 14; minor <= 15; minor++) {
        as_version(minor);
        /* Bits above the 32-bit count (ob_overflow, ob_flags) are not part of it. */
        cr_expect_eq(decref(0x0001000000000002ull), 0x0001000000000001ull, "3.%d", minor);
        cr_expect_null(deallocated, "3.%d", minor);
        cr_expect_eq(decref(0x0001000000000001ull), 0x0001000000000000ull, "3.%d", minor);
        cr_expect_not_null(deallocated, "3.%d: a count of 1 in the low half is the last reference", minor);
        cr_expect_null(decref_called, "3.%d", minor);
    }
}

Test(py_decref, elsewhere_py_decref)
{
    static const int minors[] = {8, 16, -1};
    for (size_t i = 0; i < sizeof minors / sizeof minors[0]; i++) {
        as_version(minors[i]);
        cr_expect_eq(decref(1), 1, "3.%d: the header is not touched", minors[i]);
        cr_expect_not_null(decref_called);
        cr_expect_null(deallocated);
    }
    as_version(14);
    tg_py.free_threaded = 1;
    cr_expect_eq(decref(1), 1);
    cr_expect_not_null(decref_called, "a free-threaded build: Py_DecRef");
    as_version(13);
    tg_py._Py_Dealloc = NULL;
    cr_expect_eq(decref(1), 1);
    cr_expect_not_null(decref_called, "no _Py_Dealloc: Py_DecRef");
}
