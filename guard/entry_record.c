/* A thread's entry record on free-threaded builds: where its outermost
 * guarded call was made from, kept on its record for a report that cannot
 * read its Python stack (docs/free-threading.md, "Reading another thread's
 * Python stack": the thread ran Python code, not parked within the bound);
 * and whether other threads run Python code while this one reads.
 *
 * Written by the owner at each outermost entry (tg__entry_tstate), read by
 * other threads while it is inside.  With a GIL nothing here runs: the
 * entry's thread-state function is PyThreadState_Get itself. */
#include "guard/guard_internal.h"
#include "guard/gil_state.h"
#include "cuda/cuda_hooks.h"
#include "reports/py_stack.h"

#include <string.h>

static PyThreadState *entry_tstate_first(void);
PyThreadState *(*tg__entry_tstate_fn)(void) = entry_tstate_first;

/* Free-threaded: the outermost call records the guarded method's caller
 * (the current frame: the method's own is not pushed yet), its code object
 * as a kept reference (swapped only when the caller's code changes: a loop
 * calling from one place changes no count) and its last instruction. */
static PyThreadState *entry_tstate_record(void)
{
    struct tg_thread *t = tg__self();
    if (t->nheld == 0) {
        struct tg_guard_thread *gt = tg__gthread(t);
        PyFrameObject *f = tg_py.PyEval_GetFrame(); /* borrowed */
        PyObject *code = f ? tg_py.PyFrame_GetCode(f) : NULL; /* new reference */
        const int lasti = f && tg_py.PyFrame_GetLasti ? tg_py.PyFrame_GetLasti(f) : -1;
        void *old = __atomic_load_n(&gt->entry_code, __ATOMIC_RELAXED);
        __atomic_store_n(&gt->entry_lasti, lasti, __ATOMIC_RELAXED);
        if (code == old) {
            if (code)
                tg_py.Py_DecRef(code);
        } else {
            __atomic_store_n(&gt->entry_code, (void *)code, __ATOMIC_RELEASE);
            if (old)
                tg_py.Py_DecRef((PyObject *)old);
        }
    }
    return tg_py.PyThreadState_Get();
}

/* The first entry picks the function for the build (the table is resolved
 * by then: a guard exists). */
static PyThreadState *entry_tstate_first(void)
{
    PyThreadState *(*fn)(void) = tg_py.free_threaded ? entry_tstate_record : tg_py.PyThreadState_Get;
    __atomic_store_n(&tg__entry_tstate_fn, fn, __ATOMIC_RELAXED);
    return fn();
}

int tg__others_run(void)
{
    if (!tg_py.free_threaded)
        return 0;
    PyObject *et, *ev, *tb;
    tg_py.PyErr_Fetch(&et, &ev, &tb);
    const int gil = tg__gil_refresh(); /* guard/gil_state.h: asked now, a report is no hot path */
    tg_py.PyErr_Restore(et, ev, tb);
    return !gil;
}

void tg__view_at_entry(struct tg_thread_view *v, const struct tg_thread *ot)
{
    const struct tg_guard_thread *gt = tg__gthread(ot);
    PyObject *code = (PyObject *)__atomic_load_n(&gt->entry_code, __ATOMIC_ACQUIRE);
    const int lasti = __atomic_load_n(&gt->entry_lasti, __ATOMIC_RELAXED);
    v->py_at_entry = 1;
    v->py_truncated = 0;
    v->py_omitted = 0;
    v->npy = 0;
    if (code)
        tg_py_code_frame(&v->py[v->npy++], code, lasti);
}

void tg__fold_entry(const struct tg_thread *ot, uint64_t *h, uint64_t (*mix)(uint64_t, uint64_t))
{
    struct tg_cuda_call c;
    const struct tg_guard_thread *gt = tg__gthread(ot);
    *h = mix(*h, (uintptr_t)__atomic_load_n(&gt->entry_code, __ATOMIC_ACQUIRE));
    *h = mix(*h, (uint64_t)(uint32_t)__atomic_load_n(&gt->entry_lasti, __ATOMIC_RELAXED));
    if (tg_cuda_call_read(ot, &c) && c.kind != TG_CUDA_NONE) {
        *h = mix(mix(*h, c.fn), c.func); /* not its stream: one a thread, as the thread is not in the key */
        for (int i = 0; i < c.nframes; i++)
            *h = mix(*h, (uintptr_t)c.frames[i]);
    }
}
