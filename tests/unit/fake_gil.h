/* The part of the CPython C API serialize's waits use, for unit tests that
 * run the waits without an interpreter: the GIL is a mutex that
 * PyEval_SaveThread gives up and PyEval_RestoreThread takes back; audit
 * events and error clearing do nothing.  Each test points tg_py's entries
 * at these. */
#ifndef TG_TEST_FAKE_GIL_H
#define TG_TEST_FAKE_GIL_H

#include <pthread.h>

#include "core/py_api.h"

static pthread_mutex_t gil = PTHREAD_MUTEX_INITIALIZER;
static PyThreadState *save_thread(void)
{
    pthread_mutex_unlock(&gil);
    return (PyThreadState *)&gil;
}
static void restore_thread(PyThreadState *ts)
{
    (void)ts;
    pthread_mutex_lock(&gil);
}
static int audit(const char *e, const char *f, ...)
{
    (void)e;
    (void)f;
    return 0;
}
static void err_clear(void) {}

#endif
