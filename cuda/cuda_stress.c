/* Slow paths of the CUDA hooks: tuning interference, isolate_tuning, stress.
 * See cuda/cuda_stress.h.  Nothing here runs unless a benchmark is under way
 * on the launch's device (tg_itf_maybe_busy) or, for stress, the option is on
 * and the thread is inside a tuner session. */
#include "cuda/cuda_stress.h"
#include "cuda/interference_report.h"
#include "loader/core_api.h"
#include "cuda/listener.h"
#include "cuda/tls.h"

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

#include "reports/emit.h"
#include "core/clock.h"
#include "cuda/cuda_hooks.h"
#include "cuda/cupti_backend.h"
#include "core/log.h"
#include "core/options.h"
#include "core/py_api.h"

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

void tg__cuda_bench_begin(struct tg_thread *t, int dev)
{
    (void)t;
    tg__cuda_tell_first_use(); /* cuda/listener.h: one atomic load after the first benchmark */
    tg_itf_begin(dev);
    if (tg_opts.cupti) { /* once per benchmark, not per launch */
        tg_cupti_maybe_start(0);
        tg__stress_bench_t0 = tg_mono_ns();
    }
}

/* isolate_tuning: wait until nothing benchmarks on dev.  Launches usually
 * come without the GIL (Triton's launcher and cudart call the driver without
 * it), but not always (a C extension launching from a Python call): a launch
 * with the GIL held does not wait, since the benchmarking thread needs the
 * GIL to end its session (tg_py_gil_held, checked by the caller).  In a
 * free-threaded build the same test (an attached thread state) holds for
 * another reason: a thread waiting attached holds up every stop-the-world
 * pause (the collector's), which the benchmarking thread may be waiting
 * for.  Never on the
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
            static unsigned said;
            tg__say_capped(&said, 1, 0,
                           "isolate_tuning: a launch on device %d waited %d s for a benchmark to end; "
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
        atomic_load_explicit(&tg_itf_bench[dev], memory_order_relaxed) && !tg_py_gil_held())
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
        t0 = t0 && (t0 < tg__stress_bench_t0 || !tg__stress_bench_t0) ? t0 : tg__stress_bench_t0;
        t->busy++;
        gpu = tg_cupti_verdict(t->tid, res.dev, t0, tg_mono_ns(), &gv) == 0;
        t->busy--;
        tg_cupti_session_done();
    }
    if (gpu ? !gv.skewed : res.foreign == 0)
        return 0;
    return tg__report_interference(t, inst_, &res, gpu ? &gv : NULL);
}
