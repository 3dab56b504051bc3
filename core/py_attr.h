/* Small Python attribute readers the reports share: an attribute as a C
 * string, a tuner's kernel and class names.  Every layer that fills a report
 * from Python objects uses these (one rule for the kernel name everywhere).
 *
 * All functions: GIL held; they call Python (attribute look-ups, which may
 * run properties and let other threads run); every error they meet is
 * cleared; dst is always NUL-terminated. */
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

#endif
