/* Python-side capture for reports: frames and thread names.
 * Attached (the GIL held, where there is one), under the report lock
 * (reports/emit.h: frames, the file verdicts); allocates (Python objects);
 * never on a hot path: report time only.
 * Leaves no Python exception set. */
#ifndef TG_PY_STACK_H
#define TG_PY_STACK_H

#include "core/py_api.h"
#include "reports/report.h"

/* A walk over a thread's Python frames, innermost first: the calling
 * thread's (tstate NULL) or another's, blocked with the GIL released.  With
 * a GIL, that thread must not run until the walk ends, and it would if the
 * walk let the GIL go: on 3.11 the frame objects the walk is handed are made
 * as it goes (_PyFrame_MakeAndSetFrameObject), an allocation that may run a
 * collection, whose finalizers run Python code, which lets the GIL go
 * (the eval breaker); the other thread then pops the very frame whose object
 * is being made, and the object read back from its memory is anything.  So
 * from tg_py_walk_begin to tg_py_walk_end the collector is held off
 * (PyGC_Disable, 3.10+: 3.9 makes no frame object here), and between them
 * the caller makes only the calls the walk's contract allows: PyFrame_GetCode
 * and PyFrame_GetLineNumber on the current frame, Py_DecRef of the code
 * (alive: its frame holds it), C reads; nothing that allocates a GC object
 * or runs Python code (a name's attribute read, the program's facts).  A
 * frame dropped by tg_py_walk_next is alive in its thread, so the drop runs
 * no destructor.  Each frame is checked to be a frame object before it is
 * handed out; one that is not ends the walk.  Free-threaded builds: the
 * other thread is held parked by the caller (guard/thread_view.c); the
 * collector is left alone.  GIL held (attached). */
struct tg_py_walk {
    PyFrameObject *frame; /* the current frame, a reference; NULL: the walk is over */
    int gc_paused;        /* the collector was enabled and is held off until the end */
};

/* The innermost frame (NULL: none); tg_py_walk_end follows in every case. */
PyFrameObject *tg_py_walk_begin(struct tg_py_walk *w, void *tstate);
/* The next frame out (NULL: the outermost was passed); drops the current. */
PyFrameObject *tg_py_walk_next(struct tg_py_walk *w);
/* Drops the current frame, if any, and lets the collector run again. */
void tg_py_walk_end(struct tg_py_walk *w);

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
