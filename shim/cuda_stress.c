/* Slow paths of the CUDA hooks: tuning interference, isolate_tuning, stress.
 * See shim/cuda_stress.h.  Nothing here runs unless a benchmark is under way
 * on the launch's device (tg_itf_maybe_busy) or, for stress, the option is on
 * and the thread is inside a tuner session. */
#include "shim/cuda_stress.h"
#include "shim/lifecycle.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "reports/py_stack.h"
#include "reports/emit.h"
#include "reports/report.h"
#include "core/clock.h"
#include "shim/cuda_hooks.h"
#include "shim/cupti_backend.h"
#include "core/log.h"
#include "core/options.h"
#include "core/process.h"
#include "core/py_api.h"
#include "core/py_attr.h"

static _Atomic uint64_t st_holds, st_woken, st_iso_waits, st_iso_timeouts;
static _Atomic int32_t st_holding, st_iso_waiting;
/* Bumped by tg_stress_wake; stress holds sleep on it (futex). */
static _Atomic uint32_t stress_gen;
/* isolate_tuning gave up on device d: no more waiting there until it is idle. */
static _Atomic int iso_gave_up[TG_ITF_MAXDEV];

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *rel)
{
    return syscall(SYS_futex, (uint32_t *)addr, op, val, rel, NULL, 0);
}

static struct timespec ns_to_ts(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    return ts;
}

void tg__stress_atfork_child(void)
{
    tg_itf_atfork_child();
    for (int i = 0; i < TG_ITF_MAXDEV; i++)
        atomic_store(&iso_gave_up[i], 0);
    atomic_store(&st_holding, 0);
    atomic_store(&st_iso_waiting, 0);
}

static __thread uint64_t bench_t0; /* cupti=1: when the benchmark began */

void tg__cuda_bench_begin(struct tg_thread *t, int dev)
{
    (void)t;
    tg_lifecycle_arm_fork(); /* one atomic load after the first benchmark */
    tg_itf_begin(dev);
    if (tg_opts.cupti) { /* once per benchmark, not per launch */
        tg_cupti_maybe_start(0);
        bench_t0 = tg_mono_ns();
    }
}

/* Does this thread hold the GIL?  0 in a process without Python (the
 * function is not resolved there).  PyGILState_Check is a TLS read and a
 * compare; reached only on slow paths (isolate_tuning, a report). */
static int tg_gil_held(void)
{
    int (*check)(void) = tg_py.PyGILState_Check;
    return check && check();
}

/* isolate_tuning: wait until nothing benchmarks on dev.  Launches usually
 * come without the GIL (Triton's launcher and cudart call the driver without
 * it), but not always (a C extension launching from a Python call): a launch
 * with the GIL held does not wait, since the benchmarking thread needs the
 * GIL to end its session (tg_gil_held, checked by the caller).  Never on the
 * benchmarking thread itself, nor on a thread inside a tuner session (it
 * could hold what the benchmark waits for): the caller checks those too. */
static void isolate_wait(int dev)
{
    if (atomic_load_explicit(&iso_gave_up[dev], memory_order_relaxed))
        return;
    uint64_t t0 = tg_mono_ns(), limit = (uint64_t)TG_ISOLATE_TIMEOUT_S * 1000000000ull;
    int waited = 0;
    atomic_fetch_add(&st_iso_waiting, 1);
    for (;;) {
        uint32_t v = atomic_load_explicit(&tg_itf_bench[dev], memory_order_acquire);
        if (v == 0)
            break;
        uint64_t el = tg_mono_ns() - t0;
        if (el >= limit) {
            atomic_store(&iso_gave_up[dev], 1);
            atomic_fetch_add(&st_iso_timeouts, 1);
            static _Atomic int said;
            if (!atomic_exchange(&said, 1))
                tg__warn("isolate_tuning: a launch on device %d waited %d s for a benchmark to end; "
                         "launching anyway (said once; no more waiting on that device until it is idle)",
                         dev, TG_ISOLATE_TIMEOUT_S);
            break;
        }
        waited = 1;
        /* a syscall, on purpose: this launch must not run while the benchmark
         * does; tg_tuning_session_end wakes us when the count drops to 0 */
        struct timespec rel = ns_to_ts(limit - el);
        futex(&tg_itf_bench[dev], FUTEX_WAIT_PRIVATE, v, &rel);
    }
    atomic_fetch_sub(&st_iso_waiting, 1);
    if (waited)
        atomic_fetch_add(&st_iso_waits, 1);
}

void tg__cuda_launch_busy(struct tg_thread *t, int dev, uint64_t func)
{
    /* a session that ended without tg_tuning_session_end (no Python guard
     * saw the end): close its window now, without a report */
    if (tg_itf_self.dev1 && t->nheld == 0) {
        struct tg_itf_result r;
        if (tg_itf_end(t->tid, &r) && r.last_out) {
            atomic_store(&iso_gave_up[r.dev], 0);
            futex(&tg_itf_bench[r.dev], FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
        }
    }
    if (dev < 0 || dev >= TG_ITF_MAXDEV)
        return;
    if (tg_opts.isolate_tuning && t->nheld == 0 && tg_itf_self.dev1 != dev + 1 &&
        atomic_load_explicit(&tg_itf_bench[dev], memory_order_relaxed) && !tg_gil_held())
        isolate_wait(dev);
    tg_itf_launch(dev, t->tid, func);
}

void tg__cuda_stress_hold(struct tg_thread *t, unsigned fn)
{
    (void)t;
    switch (fn) {
    /* polls and GPU-side waits do not block the host: not held */
    case TG_FN_cuStreamQuery:
    case TG_FN_cuStreamQuery_ptsz:
    case TG_FN_cuEventQuery:
    case TG_FN_cuStreamWaitEvent:
    case TG_FN_cuStreamWaitEvent_ptsz:
    case TG_FN_cuModuleGetFunction:
    case TG_FN_cuLibraryGetKernel:
        return;
    default:
        break;
    }
    uint32_t g0 = atomic_load_explicit(&stress_gen, memory_order_acquire);
    uint64_t t0 = tg_mono_ns(), limit = (uint64_t)tg_opts.stress_ms * 1000000ull;
    atomic_fetch_add(&st_holds, 1);
    atomic_fetch_add(&st_holding, 1);
    for (;;) {
        if (atomic_load_explicit(&stress_gen, memory_order_acquire) != g0) {
            atomic_fetch_add(&st_woken, 1);
            break;
        }
        uint64_t el = tg_mono_ns() - t0;
        if (el >= limit)
            break;
        /* a syscall, on purpose (stress=1 only): this thread is held so
         * that others run; tg_stress_wake ends it early */
        struct timespec rel = ns_to_ts(limit - el);
        futex(&stress_gen, FUTEX_WAIT_PRIVATE, g0, &rel);
    }
    atomic_fetch_sub(&st_holding, 1);
}

void tg_stress_wake(void)
{
    if (!tg_opts.stress)
        return;
    atomic_fetch_add_explicit(&stress_gen, 1, memory_order_release);
    futex(&stress_gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

void tg_stress_stats(struct tg_stress_stats *o)
{
    o->holds = atomic_load(&st_holds);
    o->holds_woken = atomic_load(&st_woken);
    o->isolate_waits = atomic_load(&st_iso_waits);
    o->isolate_timeouts = atomic_load(&st_iso_timeouts);
    struct tg_emit_stats es;
    tg_emit_stats(&es);
    o->interference_reports = es.written[TG_REPORT_INTERFERENCE];
    o->holding = atomic_load(&st_holding);
    o->isolate_waiting = atomic_load(&st_iso_waiting);
}

/* ---- the report (GIL held) ------------------------------------------------- */

/* ~100 KB: static.  Filling it calls Python (names, str(best_config), frames),
 * which lets other threads run, so the GIL alone does not keep two reports
 * apart: filled and emitted under tg_report_lock (reports/emit.h) when the
 * GIL is held, and always under itf_mu, which also orders reporters without
 * the GIL (inst == NULL: no Python facts).  Lock order: the report lock, then
 * itf_mu.  No deadlock with the GIL: a thread blocks on itf_mu with the GIL
 * held only while it holds the report lock, and then the holder of itf_mu
 * is a reporter without the GIL, which never waits for it. */
static struct tg_report itf_report;
static pthread_mutex_t itf_mu = PTHREAD_MUTEX_INITIALIZER;

uint64_t tg_tuning_session_end(struct tg_thread *t, void *inst_)
{
    if (!tg_itf_self.dev1)
        return 0;
    struct tg_itf_result res;
    if (!tg_itf_end(t->tid, &res))
        return 0;
    if (res.last_out) {
        atomic_store(&iso_gave_up[res.dev], 0);
        /* wake isolate_tuning waiters: the device is quiet again */
        futex(&tg_itf_bench[res.dev], FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
    }
    /* cupti=1: skewed only if foreign kernels executed inside the timed
     * GPU intervals (detectors/gpu_overlap.h); no GPU evidence: launch counts */
    struct tg_gpu_verdict gv;
    int gpu = 0;
    if (tg_opts.cupti && tg_cupti_active()) {
        uint64_t t0 = tg_cupti_session_t0();
        t0 = t0 && (t0 < bench_t0 || !bench_t0) ? t0 : bench_t0;
        t->busy++;
        gpu = tg_cupti_verdict(t->tid, res.dev, t0, tg_mono_ns(), &gv) == 0;
        t->busy--;
        tg_cupti_session_done();
    }
    if (gpu ? !gv.skewed : res.foreign == 0)
        return 0;
    PyObject *inst = inst_;
    struct tg_report *r = &itf_report;
    /* the report path, not a hot one: a blocking lock is fine here */
    int gil = inst || tg_gil_held();
    if (gil)
        tg_report_lock(); /* waits with the GIL released */
    pthread_mutex_lock(&itf_mu);
    t->busy++;
    PyObject *et = NULL, *ev = NULL, *etb = NULL;
    if (inst)
        tg_py.PyErr_Fetch(&et, &ev, &etb); /* the session may be ending in an exception */
    memset(r, 0, sizeof *r);
    r->kind = TG_REPORT_INTERFERENCE;
    r->pid = getpid();
    r->rank = tg_proc_rank();
    r->mode = tg_mode_name(tg_opts.mode);
    r->instance = (uintptr_t)inst;
    r->ts_ns = tg_mono_ns();
    r->itf.device = res.dev;
    r->itf.foreign = res.foreign;
    r->itf.own = res.own;
    tg_cuda_kernel_name(res.func, r->itf.cuda_kernel, sizeof r->itf.cuda_kernel);
    for (int i = 0; i < res.nsamples && i < TG_ITF_REPORT_FROM; i++) {
        r->itf.from[i].tid = res.samples[i].tid;
        r->itf.from[i].func = res.samples[i].func;
        tg_cuda_kernel_name(res.samples[i].func, r->itf.from[i].kernel, sizeof r->itf.from[i].kernel);
        r->itf.nfrom++;
    }
    if (gpu) {
        r->itf.gpu = 1;
        r->itf.overlap_ns = gv.overlap_ns;
        r->itf.timed_ns = gv.timed_ns;
        r->itf.own_kernels = gv.own_kernels;
        r->itf.foreign_kernels = gv.foreign_kernels;
        for (int i = 0; i < gv.nby && i < TG_ITF_REPORT_FROM; i++, r->itf.ngpu++) {
            r->itf.gpu_by[i].tid = gv.by[i].tid;
            r->itf.gpu_by[i].stream = gv.by[i].stream;
            r->itf.gpu_by[i].count = gv.by[i].count;
            r->itf.gpu_by[i].overlap_ns = gv.by[i].overlap_ns;
            snprintf(r->itf.gpu_by[i].kernel, sizeof r->itf.gpu_by[i].kernel, "%s", gv.by[i].name);
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
