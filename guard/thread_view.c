/* The threads a report shows (struct tg_thread_view): the calling thread,
 * another thread inside a tuner, the thread an exception was raised in.
 *
 * Two steps each.  The C step (tg__view_self, tg__view_other) calls no
 * Python code, and its frame walk holds the collector off (a collection's
 * finalizers would run some: reports/py_stack.h), so no other thread runs
 * meanwhile: another thread read through its occupant slot stays blocked
 * where it is, its state valid.
 * Without the GIL (a free-threaded build) it does run: its stack is read
 * while it is held parked, or shown as of its entry (view_other_parked).  The
 * names step (tg__view_names) runs Python code (threading's name property)
 * and a driver call (the kernel's name): after it, no occupant slot or other
 * thread's state may be touched.
 *
 * Everything here: GIL held, off the hot path (report time only). */
#include "guard/guard_internal.h"
#include "core/builtin_tuners.h"
#include "core/clock.h"
#include "core/py_attr.h"
#include "core/real_sym.h"
#include "core/thread_hold.h"
#include "cuda/cuda_hooks.h"
#include "reports/native_stack.h"
#include "reports/py_stack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python-level evidence that a thread is tuning, for when the CUDA hooks saw
 * nothing (no libcuda in the process, or a path they do not cover). */
static int frames_show_tuning(const struct tg_thread_view *v)
{
    for (int i = 0; i < v->npy; i++) {
        const char *f = strrchr(v->py[i].func, '.');
        if (tg_tuning_frame(f ? f + 1 : v->py[i].func)) /* core/builtin_tuners.inc */
            return 1;
    }
    return 0;
}

/* The calling thread's native stack from the first frame outside tunerguard
 * inward: the caller of the guard (CPython's call of the method descriptor).
 * What is ours on top (this capture, the report's own functions, the guard)
 * is dropped by address, so the stack is the same however the compiler split
 * or inlined those.  Extra frames are asked for to make up for the dropped
 * ones.  Ours: the object of this function (tg_same_object, core/real_sym.h:
 * two dladdr per dropped frame, report time only). */
__attribute__((noinline)) static int native_from_guard_caller(void **frames, int max)
{
    void *tmp[TG_MAX_NATIVE_FRAMES + 16];
    int n = tg_native_capture(tmp, (int)(sizeof tmp / sizeof tmp[0]), 0);
    int first = 0;
    while (first < n && tg_same_object((char *)tmp[first] - 1, (const void *)native_from_guard_caller))
        first++;
    int k = 0;
    for (int i = first; i < n && k < max; i++)
        frames[k++] = tmp[i];
    return k;
}

/* The calling thread's own last CUDA call: which device and stream it was
 * driving when it entered (a thread on another GPU shows another device).
 * The native stack stays the one taken at entry.  Own record: no writer runs
 * concurrently, the read just copies.  Allocates nothing. */
static void view_self_cuda(struct tg_thread_view *v, const struct tg_thread *t)
{
    tg_cuda_call_read(t, &v->cuda); /* its own record: never torn */
    if (v->cuda.kind == TG_CUDA_NONE) {
        v->entry_device = t->entry_device;
        v->has_entry_device = v->entry_device >= 0;
        return;
    }
    v->has_cuda = 1;
    v->cuda.nframes = 0; /* its stack at that call is not this report's concern */
    snprintf(v->cuda_fn, sizeof v->cuda_fn, "%s", tg_cuda_fn_name(v->cuda.fn));
}

__attribute__((noinline)) void tg__view_self(struct tg_thread_view *v, struct tg_thread *t, const char *where,
                                             int with_cuda)
{
    v->tid = t->tid;
    v->ident = t->ident;
    tg_py_capture_frames(v, NULL);
    v->nnative = native_from_guard_caller(v->native, TG_MAX_NATIVE_FRAMES);
    snprintf(v->native_where, sizeof v->native_where, "%s", where);
    v->entered_ns = tg_mono_ns();
    if (with_cuda)
        view_self_cuda(v, t);
}

/* Free-threaded: ot's frames, read while it is held parked in a CUDA call
 * or one of tunerguard's waits (core/thread_hold.h); else, after the bound,
 * its entry record.  The wait for it is made detached (a stop-the-world
 * pause elsewhere does not wait for this thread meanwhile). */
static void view_other_parked(struct tg_thread_view *v, struct tg_thread *ot, void *ts)
{
    PyThreadState *self = tg_py.PyEval_SaveThread();
    const int held = tg_hold_other(ot, ts);
    tg_py.PyEval_RestoreThread(self);
    if (!held) {
        tg__view_at_entry(v, ot);
        return;
    }
    tg_py_capture_frames(v, ts);
    tg_hold_release(ot);
}

void tg__view_other(struct tg_thread_view *v, const struct tg_occupant *o)
{
    const struct tg_thread *ot = o->thread;
    v->tid = o->tid;
    v->ident = o->ident;
    void *ts = tg__occupant_tstate(o);
    if (ts && tg__others_run())
        view_other_parked(v, (struct tg_thread *)ot, ts); /* its hold word: atomics only */
    else if (ts)
        tg_py_capture_frames(v, ts);
    else if (o->tstate)
        v->py_unreadable = 1; /* finalizing; the view was zeroed: no frame */
    v->entered_ns = tg_ticks_to_ns(o->entered_ns);
    int read_ok = tg_cuda_call_read(ot, &v->cuda);
    if (v->cuda.kind != TG_CUDA_NONE) {
        v->has_cuda = 1;
        snprintf(v->cuda_fn, sizeof v->cuda_fn, "%s", tg_cuda_fn_name(v->cuda.fn));
        if (v->cuda.nframes > 0) {
            v->nnative = v->cuda.nframes;
            memcpy(v->native, v->cuda.frames, sizeof(void *) * (size_t)v->nnative);
            snprintf(v->native_where, sizeof v->native_where, "in %s", v->cuda_fn);
        }
    }
    if (!v->has_cuda && read_ok && ot->entry_device >= 0) {
        v->has_entry_device = 1;
        v->entry_device = ot->entry_device;
    }
    v->launches = ot->session_launches;
    v->syncs = ot->session_syncs;
    v->benchmarking = tg_thread_tuning(ot) || ot->session_launches > 1 || frames_show_tuning(v);
}

void tg__view_names(struct tg_thread_view *v)
{
    tg_py_thread_name(v->ident, v->name, sizeof v->name);
    if (v->has_cuda) /* a driver call (cuFuncGetName), after the C-only captures */
        tg_cuda_kernel_name(v->cuda.func, v->cuda_kernel, sizeof v->cuda_kernel);
}

void tg__view_traceback(struct tg_thread_view *v, PyObject *tb)
{
    static struct tg_thread_view tmp, callers; /* big; under the report lock */
    int n = 0;
    PyObject *cur = tb;
    if (cur)
        tg_py.Py_IncRef(cur);
    while (cur && cur != tg_py.none && n < TG_MAX_PY_FRAMES) {
        PyObject *frame = tg_py.PyObject_GetAttrString(cur, "tb_frame");
        PyObject *lineno = tg_py.PyObject_GetAttrString(cur, "tb_lineno");
        if (frame) {
            PyObject *code = tg_py.PyFrame_GetCode((PyFrameObject *)frame);
            tg_py_attr_str(code, "co_filename", tmp.py[n].file, sizeof tmp.py[n].file);
            tg_py_attr_str(code, tg_py.minor >= 11 ? "co_qualname" : "co_name", tmp.py[n].func,
                           sizeof tmp.py[n].func);
            PyObject *ls = lineno ? tg_py.PyObject_Str(lineno) : NULL;
            const char *l = ls ? tg_py.PyUnicode_AsUTF8(ls) : NULL;
            tmp.py[n].line = l ? atoi(l) : 0;
            if (ls)
                tg_py.Py_DecRef(ls);
            if (code)
                tg_py.Py_DecRef(code);
            n++;
        }
        PyObject *next = tg_py.PyObject_GetAttrString(cur, "tb_next");
        if (frame)
            tg_py.Py_DecRef(frame);
        if (lineno)
            tg_py.Py_DecRef(lineno);
        tg_py.Py_DecRef(cur);
        cur = next;
        tg_py_drop_error();
    }
    if (cur)
        tg_py.Py_DecRef(cur);
    /* The traceback runs outermost to innermost: reverse it. */
    v->npy = 0;
    for (int i = n - 1; i >= 0; i--)
        v->py[v->npy++] = tmp.py[i];
    tg_py_capture_frames(&callers, NULL);
    for (int i = 0; i < callers.npy && v->npy < TG_MAX_PY_FRAMES; i++)
        v->py[v->npy++] = callers.py[i];
    v->py_truncated = callers.py_truncated || v->npy == TG_MAX_PY_FRAMES;
    v->py_omitted = 0; /* the frames cut here are the outermost */
}
