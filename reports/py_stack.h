/* Python-side capture for reports: frames and thread names.
 * Attached (the GIL held, where there is one), under the report lock
 * (reports/emit.h: frames, the file verdicts); allocates (Python objects);
 * never on a hot path: report time only.
 * Leaves no Python exception set. */
#ifndef TG_PY_STACK_H
#define TG_PY_STACK_H

#include "core/py_api.h"
#include "reports/report.h"

/* Frames of the calling thread (tstate NULL) or of another thread whose
 * PyThreadState is given (that thread must be blocked with the GIL released,
 * which is the case for a thread inside a tuner while another thread runs).
 * Most recent call first.  Sets v->npy and v->py_truncated.  Each file
 * name not seen before is decided the program's or not, once
 * (reports/py_program.h). */
void tg_py_capture_frames(struct tg_thread_view *v, void *tstate);

/* One frame from a code object and a last instruction (PyFrame_GetLasti's
 * byte offset; its line by PyCode_Addr2Line, 0 when that is not there): a
 * thread's entry record (guard/entry_record.c).  The code object is alive
 * (the caller's reference). */
void tg_py_code_frame(struct tg_py_frame *f, PyObject *code, int lasti);

/* Once, before any report (GIL held): tells the text report's frame
 * classing (reports/stack_fold.h) the standard library's directory, that of
 * os.__file__ (the os module is always loaded; nothing is imported). */
void tg_py_stack_arm(void);

/* threading's name for the thread with this ident ("" if none, and while
 * the interpreter finalizes). */
void tg_py_thread_name(unsigned long ident, char *buf, int len);

#endif
