/* Whether the GIL is on, for serialize's turn (guard/gil_state.h): a build
 * with a GIL never asks; a free-threaded build asks sys._is_gil_enabled()
 * once, keeps the answer, and asks again only when told (tg__gil_refresh);
 * where it cannot ask, the GIL counts as on.  The interpreter is faked: the
 * C API rows tg__gil_refresh calls, sys._is_gil_enabled a counter. */
#include <criterion/criterion.h>

#include "core/py_api.h"
#include "guard/gil_state.h"

static PyObject *fake_sys = (PyObject *)(uintptr_t)0x5a5;
static PyObject *fake_fn = (PyObject *)(uintptr_t)0xf00;
static PyObject *fake_true = (PyObject *)(uintptr_t)0x1;
static PyObject *fake_false = (PyObject *)(uintptr_t)0x2;
static int gil_enabled, has_fn, calls, lookups, decrefs;

static PyObject *add_module(const char *name)
{
    cr_assert_str_eq(name, "sys");
    return fake_sys;
}

static PyObject *get_attr(PyObject *o, const char *name)
{
    cr_assert_eq(o, fake_sys);
    cr_assert_str_eq(name, "_is_gil_enabled");
    lookups++;
    return has_fn ? fake_fn : NULL;
}

static PyObject *call(PyObject *fn, PyObject *args)
{
    cr_assert_eq(fn, fake_fn);
    cr_assert_null(args);
    calls++;
    return gil_enabled ? fake_true : fake_false;
}

static int is_true(PyObject *o)
{
    return o == fake_true;
}

static void decref(PyObject *o)
{
    (void)o;
    decrefs++;
}

static PyObject *err_occurred(void)
{
    return NULL;
}

static void err_clear(void)
{
}

static void setup(void)
{
    tg__gil_state = -1;
    gil_enabled = 0;
    has_fn = 1;
    calls = lookups = decrefs = 0;
    tg_py.PyImport_AddModule = add_module;
    tg_py.PyObject_GetAttrString = get_attr;
    tg_py.PyObject_CallObject = call;
    tg_py.PyObject_IsTrue = is_true;
    tg_py.Py_DecRef = decref;
    tg_py.PyErr_Occurred = err_occurred;
    tg_py.PyErr_Clear = err_clear;
}

TestSuite(gil_state, .init = setup);

Test(gil_state, a_build_with_a_gil_never_asks)
{
    tg_py.free_threaded = 0;
    cr_assert_eq(tg__gil_on(), 1);
    cr_assert_eq(tg__gil_refresh(), 1);
    cr_assert_eq(calls + lookups, 0, "sys._is_gil_enabled is not asked in a build with a GIL");
}

Test(gil_state, free_threaded_asks_once_then_when_told)
{
    tg_py.free_threaded = 1;
    gil_enabled = 0;
    cr_assert_eq(tg__gil_on(), 0, "the GIL off, as sys._is_gil_enabled() says");
    cr_assert_eq(tg__gil_on(), 0);
    cr_assert_eq(calls, 1, "asked once, then the kept answer");
    gil_enabled = 1; /* an import turned it on */
    cr_assert_eq(tg__gil_on(), 0, "not seen until asked again");
    cr_assert_eq(tg__gil_refresh(), 1);
    cr_assert_eq(tg__gil_on(), 1);
    gil_enabled = 0;
    cr_assert_eq(tg__gil_refresh(), 0);
    cr_assert_eq(calls, 3);
    cr_assert_eq(decrefs, 3, "each answer given back");
}

Test(gil_state, free_threaded_without_the_function_counts_the_gil_on)
{
    tg_py.free_threaded = 1;
    has_fn = 0;
    cr_assert_eq(tg__gil_on(), 1, "where it cannot be asked, the policy for a GIL");
    cr_assert_eq(calls, 0);
}
