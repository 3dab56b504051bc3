/* The tuning-under-load report: a benchmark ran while other threads
 * launched kernels on its device.  What cuda/cuda_stress.c found when the
 * benchmarking thread's outermost tuner session ended, made into a report
 * (kernel and tuner names, the launching threads, what CUPTI saw) and
 * handed to the emitter (reports/emit.h).  GIL held when inst is non-NULL;
 * without the GIL (inst NULL) no Python is called.  Off every hot path. */
#include "cuda/interference_report.h"
#include "core/clock.h"
#include "core/options.h"
#include "core/process.h"
#include "core/py_api.h"
#include "core/py_attr.h"
#include "reports/emit.h"
#include "reports/py_stack.h"
#include "reports/report.h"
#include "cuda/cuda_hooks.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ~100 KB: static.  Filling it calls Python (names, str(best_config), frames),
 * which lets other threads run, so the GIL alone does not keep two reports
 * apart: filled and emitted under tg_report_lock (reports/emit.h) when the
 * GIL is held, and always under itf_mu, which also orders reporters without
 * the GIL (inst == NULL: no Python facts).  Lock order: the report lock, then
 * itf_mu.  No deadlock with the GIL: a thread blocks on itf_mu with the GIL
 * held only while it holds the report lock, and then the holder of itf_mu
 * is a reporter without the GIL, which never waits for it.  A free-threaded
 * build: the same with "an attached thread state" for "the GIL held"
 * (tg_py_gil_held): an attached reporter calls Python, so it takes the
 * report lock; a detached one, no Python, never does. */
static struct tg_report itf_report;
static pthread_mutex_t itf_mu = PTHREAD_MUTEX_INITIALIZER;

uint64_t tg__report_interference(struct tg_thread *t, void *inst_, const struct tg_itf_result *res,
                                 const struct tg_gpu_verdict *gv)
{
    PyObject *inst = inst_;
    struct tg_report *r = &itf_report;
    /* the report path, not a hot one: a blocking lock is fine here */
    int gil = inst || tg_py_gil_held();
    if (gil)
        tg_report_lock(); /* waits with the GIL released */
    pthread_mutex_lock(&itf_mu);
    t->busy++;
    PyObject *et = NULL, *ev = NULL, *etb = NULL;
    if (inst)
        tg_py.PyErr_Fetch(&et, &ev, &etb); /* the session may be ending in an exception */
    memset(r, 0, sizeof *r);
    tg_report_head(r, TG_REPORT_INTERFERENCE);
    r->instance = (uintptr_t)inst;
    r->itf.device = res->dev;
    r->itf.foreign = res->foreign;
    r->itf.own = res->own;
    tg_cuda_kernel_name(res->func, r->itf.cuda_kernel, sizeof r->itf.cuda_kernel);
    for (int i = 0; i < res->nsamples && i < TG_ITF_REPORT_FROM; i++) {
        r->itf.from[i].tid = res->samples[i].tid;
        r->itf.from[i].func = res->samples[i].func;
        tg_cuda_kernel_name(res->samples[i].func, r->itf.from[i].kernel, sizeof r->itf.from[i].kernel);
        r->itf.nfrom++;
    }
    if (gv) {
        r->itf.gpu = 1;
        r->itf.overlap_ns = gv->overlap_ns;
        r->itf.timed_ns = gv->timed_ns;
        r->itf.own_kernels = gv->own_kernels;
        r->itf.foreign_kernels = gv->foreign_kernels;
        for (int i = 0; i < gv->nby && i < TG_ITF_REPORT_FROM; i++, r->itf.ngpu++) {
            r->itf.gpu_by[i].tid = gv->by[i].tid;
            r->itf.gpu_by[i].stream = gv->by[i].stream;
            r->itf.gpu_by[i].count = gv->by[i].count;
            r->itf.gpu_by[i].overlap_ns = gv->by[i].overlap_ns;
            snprintf(r->itf.gpu_by[i].kernel, sizeof r->itf.gpu_by[i].kernel, "%s", gv->by[i].name);
        }
    }
    struct tg_thread_view *e = &r->entering;
    e->tid = t->tid;
    e->ident = t->ident;
    e->benchmarking = 1;
    e->launches = t->session_launches;
    e->syncs = t->session_syncs;
    if (inst) {
        PyObject *type = tg_py.PyObject_Type(inst);
        char mod[96], qual[96];
        tg_py_attr_str(type, "__module__", mod, sizeof mod);
        tg_py_attr_str(type, "__qualname__", qual, sizeof qual);
        if (type)
            tg_py.Py_DecRef(type);
        snprintf(r->tuner_class, sizeof r->tuner_class, "%s.%s", mod, qual);
        snprintf(r->method, sizeof r->method, "%s.run", qual);
        tg_py_kernel_name(inst, r->kernel, sizeof r->kernel);
        tg_py_attr_text(inst, "best_config", r->itf.best_config, sizeof r->itf.best_config);
        tg_py_thread_name(t->ident, e->name, sizeof e->name);
        tg_py_capture_frames(e, NULL);
        tg_py.PyErr_Restore(et, ev, etb);
    } else {
        snprintf(r->kernel, sizeof r->kernel, "%s", r->itf.cuda_kernel[0] ? r->itf.cuda_kernel : "?");
    }
    uint64_t seq = tg_emit(r, NULL); /* suppressions=: an interference: line */
    t->busy--;
    pthread_mutex_unlock(&itf_mu);
    if (gil)
        tg_report_unlock();
    return seq;
}
