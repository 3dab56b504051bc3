/* Small Python attribute readers the reports share: an attribute as a C
 * string, a tuner's kernel and class names.  Every layer that fills a report
 * from Python objects uses these (one rule for the kernel name everywhere).
 *
 * All functions: GIL held; they call Python (attribute look-ups, which may
 * run properties and let other threads run); every error they meet is
 * dropped (tg_py_drop_error); dst is always NUL-terminated. */
#ifndef TG_PY_ATTR_H
#define TG_PY_ATTR_H

#include "core/py_api.h"

#include <stddef.h>

/* obj.<attr> if it is a str, else "" (obj NULL: ""). */
void tg_py_attr_str(PyObject *obj, const char *attr, char *dst, size_t len);

/* str(obj.<attr>) unless the attribute is missing or None, else "". */
void tg_py_attr_text(PyObject *obj, const char *attr, char *dst, size_t len);

/* The kernel a tuner instance tunes: inst.base_fn.__name__ (Triton's
 * Autotuner), else inst.fn.__name__ (Inductor's CachingAutotuner), else
 * inst.fn.fn.__name__ (Heuristics in between), else "?". */
void tg_py_kernel_name(PyObject *inst, char *dst, size_t len);

/* "<module>.<qualname>" of type(inst). */
void tg_py_class_name(PyObject *inst, char *dst, size_t len);

/* Drop the error that Python code run by tunerguard left set, as
 * PyErr_Clear does, but never the program's own: an exception that is no
 * Exception (KeyboardInterrupt from Ctrl-C's handler, SystemExit from a
 * handler that calls sys.exit), met while the thread is in a guarded call,
 * is kept on the thread (the first one) and raised when that call returns
 * (tg_py_raise_kept), so that a signal whose handler ran inside one of our
 * look-ups is not lost.  Elsewhere (arming, the exit summary), cleared.
 * GIL held; allocates nothing. */
void tg_py_drop_error(void);

struct tg_thread;
/* A guarded call of t returns res with a kept exception: res is dropped and
 * the kept exception raised instead (it replaces the call's own error, if
 * any).  Returns NULL.  GIL held. */
PyObject *tg_py_raise_kept(struct tg_thread *t, PyObject *res);

#endif
