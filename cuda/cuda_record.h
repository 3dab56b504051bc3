/* The hot path of a CUDA hook: what one intercepted call records on its own
 * thread, and the per-variant counters.  Included only by cuda/cuda_hooks.c.
 *
 * Cost contract (docs/benchmarks.md, "CUDA launch hook cost"): no allocation,
 * no lock, no syscall, no atomic read-modify-write for the first 255 threads
 * that record (after that, one uncontended-ish atomic add per call on a shared
 * counter slot).  The clock is tg_ticks() (rdtsc on x86-64).  What a
 * recorded launch touches in the common case: the thread's hook line and
 * its `last` record (core/thread_state.h), its counter row, tg_opts, the
 * real pointer, tg__cuda_gen and the device's tg_itf_bench word; nothing
 * else, and no call.  The only driver calls
 * are cuCtxGetCurrent for calls on the NULL/legacy/per-thread stream or with
 * no stream (a driver TLS read), and, once per new stream or context per
 * thread, cuStreamGetCtx + cuCtxGetDevice[_v2] (tg__cuda_device_miss).
 * All run on the calling thread; none is async-signal-safe (the driver isn't).
 */
#ifndef TG_CUDA_RECORD_H
#define TG_CUDA_RECORD_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "reports/native_stack.h"
#include "detectors/tuner_table.h"
#include "cuda/cuda_hooks.h"
#include "cuda/listener.h"
#include "cuda/cuda_stress.h"
#include "core/clock.h"
#include "core/options.h"
#include "core/thread_state.h"
#include "core/thread_hold.h"

/* ---- counters: one slot per recording thread (first come), the last slot
 * shared by every thread after the first 255 ---------------------------- */
#define TG_CUDA_SLOTS 256
/* A row per slot, padded to whole cache lines: rows of TG_CUDA_NFN counters
 * (232 bytes) shared a line with the next thread's row, so each thread's
 * counts moved a line its neighbour writes too. */
#define TG_CUDA_ROW ((TG_CUDA_NFN + 7) & ~7)
extern _Atomic uint64_t tg__cuda_counts[TG_CUDA_SLOTS][TG_CUDA_ROW] __attribute__((aligned(64)));
int tg__cuda_claim_slot(struct tg_thread *t);

/* fn's counter on t's row (t->cuda_row, claimed at its first count). */
static inline __attribute__((always_inline)) void tg__cuda_count_inc(struct tg_thread *t, unsigned fn)
{
    int s = t->cuda_row - 1;
    if (__builtin_expect(s < 0, 0))
        s = tg__cuda_claim_slot(t);
    _Atomic uint64_t *c = &tg__cuda_counts[s][fn];
    if (__builtin_expect(s < TG_CUDA_SLOTS - 1, 1))  /* sole writer: no RMW */
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ---- device of a call: per-thread direct-mapped cache ------------------- */
#define TG_CUDA_DEVCACHE 16
#define TG_CUDA_CTX_TAG (1ULL << 63)
struct tg__devcache_entry {
    uint64_t key;  /* stream handle, or ctx | TG_CUDA_CTX_TAG; 0 = empty */
    uint32_t gen;  /* tg__cuda_gen when filled */
    int32_t dev;
};
extern __thread struct tg__devcache_entry tg__devcache[TG_CUDA_DEVCACHE];
/* Bumped when a stream is destroyed (its handle may be reused) and in a fork
 * child: every cached entry is then stale. */
extern _Atomic uint32_t tg__cuda_gen;
/* Real support entry points (not wrapped rows), resolved with the table by
 * cuda/cuda_hooks.c; each NULL if the driver lacks it.  Written before the
 * table is published, identical values if two threads race to resolve. */
struct tg__cuda_support {
    CUresult (*_Atomic ctx_get_current)(CUcontext *);
    CUresult (*_Atomic stream_get_ctx)(CUstream, CUcontext *);
    CUresult (*_Atomic ctx_get_device)(CUdevice *);
    CUresult (*_Atomic ctx_get_device_v2)(CUdevice *, CUcontext);
    CUresult (*_Atomic func_get_name)(const char **, CUfunction);
    CUresult (*_Atomic kernel_get_name)(const char **, CUkernel);
};
/* 1 once the driver's functions are resolved (tg_cuda_active): set by
 * cuda/cuda_hooks.c, defined in cuda/cuda_record.c. */
extern _Atomic int tg__cuda_ready;
extern struct tg__cuda_support tg__cuda_sup;
#define TG__SUP(field) atomic_load_explicit(&tg__cuda_sup.field, memory_order_relaxed)

int tg__cuda_device_miss(struct tg_thread *t, uint64_t key, CUstream s, CUcontext ctx);

static inline int tg__cuda_special_stream(CUstream s)
{
    return (uintptr_t)s <= (uintptr_t)CU_STREAM_PER_THREAD; /* NULL, LEGACY, PER_THREAD */
}

static inline __attribute__((always_inline)) int tg__cuda_device(struct tg_thread *t, CUstream s, CUcontext ctx)
{
    uint64_t key;
    if (!ctx && tg__cuda_special_stream(s)) {
        /* the current context decides: one driver TLS read */
        CUresult (*get_current)(CUcontext *) = TG__SUP(ctx_get_current);
        if (!get_current)
            return -1;
        t->busy++;
        CUresult rc = get_current(&ctx);
        t->busy--;
        if (rc != CUDA_SUCCESS || !ctx)
            return -1;
    }
    key = ctx ? ((uint64_t)(uintptr_t)ctx | TG_CUDA_CTX_TAG) : (uint64_t)(uintptr_t)s;
    const uint32_t gen = atomic_load_explicit(&tg__cuda_gen, memory_order_relaxed);
    if (__builtin_expect(t->dev1_key == key && t->dev1_gen == gen, 1))
        return t->dev1_dev; /* the hook line: the same stream as the last launch */
    int dev;
    struct tg__devcache_entry *e = &tg__devcache[(key >> 4 ^ key >> 10) % TG_CUDA_DEVCACHE];
    if (e->key == key && e->gen == gen)
        dev = e->dev;
    else
        dev = tg__cuda_device_miss(t, key, s, ctx);
    t->dev1_key = key;
    t->dev1_gen = gen;
    t->dev1_dev = dev;
    return dev;
}

/* ---- the record -------------------------------------------------------------- */

/* Seqlock writer side (core/thread_state.h): seq odd while writing. */
static inline void tg__cuda_seq_begin(struct tg_cuda_call *c)
{
    __atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}
static inline void tg__cuda_seq_end(struct tg_cuda_call *c)
{
    __atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELEASE);
}

/* Before the real call.  Returns the thread record to pass to
 * tg__cuda_leave, or NULL when the call must go straight through (tunerguard
 * off, or tunerguard itself is running on this thread). */
static inline __attribute__((always_inline)) struct tg_thread *tg__cuda_enter(unsigned fn, int kind, CUstream s, CUcontext ctx,
                                               uint64_t func)
{
    if (__builtin_expect(tg_opts.mode == TG_MODE_OFF, 0))
        return NULL;
    struct tg_thread *t = tg__self_fast();
    if (__builtin_expect(t->busy > 0, 0))
        return NULL;
    tg__cuda_count_inc(t, fn);
    if (kind == TG_CUDA_OTHER)
        return t; /* bookkeeping rows: counted, not recorded */
    int dev = tg__cuda_device(t, s, ctx);
    /* a benchmark runs on this device: count the launch as interference,
     * isolate_tuning may wait (cuda/cuda_stress.c); one load + one branch */
    if (kind == TG_CUDA_LAUNCH && __builtin_expect(tg_itf_maybe_busy(dev), 0))
        tg__cuda_launch_busy(t, dev, func);
    /* Everything slow is done before the seqlock write section below: a
     * reader (a race report on another thread, tg_cuda_call_read) retries a
     * bounded number of times and then gives up, so the section must stay a
     * handful of stores.  The unwind (up to TG_MAX_NATIVE_FRAMES frames)
     * goes into a local array first (stack only: no allocation). */
    uint64_t now = tg_ticks(); /* converted by the readers (core/thread_state.h) */
    void *frames[TG_MAX_NATIVE_FRAMES];
    int nframes = 0;
    /* In a session: a registered one (nheld, which a thread adopting t's
     * unregistered session sets, with the GIL, while t may be here), or an
     * unregistered one (guard/session.c), whose evidence is published instead. */
    const int registered = __atomic_load_n(&t->nheld, __ATOMIC_ACQUIRE) > 0;
    if (registered || __builtin_expect(__atomic_load_n(&t->lazy_inst, __ATOMIC_RELAXED) != 0, 0)) {
        if (kind == TG_CUDA_LAUNCH) {
            const uint32_t nl = t->session_launches + 1;
            TG_OWN_SET(t->session_launches, nl);
            if (__builtin_expect(nl == 2, 0)) {
                TG_OWN_SET(t->session_multi, 1u); /* once a session: the evidence line (core/thread_state.h) */
                if (registered)
                    tg_tuner_mark_evidence(t, TG_EV_LAUNCHES); /* in t's slots (detectors/tuner_table.h) */
                else
                    tg__cuda_tell_evidence(t, TG_EV_LAUNCHES); /* cuda/listener.h */
            }
        } else if (kind == TG_CUDA_SYNC && (TG_OWN_SET(t->session_syncs, t->session_syncs + 1), t->session_syncs == 1)) {
            tg_tuning_seen(); /* a session's first synchronize: benchmarking evidence (cuda/cuda_hooks.h) */
            if (registered)
                tg_tuner_mark_evidence(t, TG_EV_TUNING);
            else
                tg__cuda_tell_evidence(t, TG_EV_TUNING);
        }
        if (!tg_itf_self.dev1 && (t->session_syncs > 0 || t->session_launches > 1))
            tg__cuda_bench_begin(t, dev); /* now benchmarking on dev */
        if (kind == TG_CUDA_SYNC || kind == TG_CUDA_MODULE) {
            /* blocking call inside a tuner session: where it blocks is what a
             * race report shows (tg_native_capture: no alloc/lock/syscall) */
            t->busy++;
            nframes = tg_native_capture(frames, TG_MAX_NATIVE_FRAMES, 1);
            t->busy--;
        }
    }
    struct tg_cuda_call *c = &t->last;
    /* The section's stores relaxed atomics, as the reader's loads
     * (cuda_record.c): a seqlock's reads race with its writer by design,
     * and C11 defines them only as atomics.  Plain movs on x86-64. */
    tg__cuda_seq_begin(c);
    TG_OWN_SET(c->fn, (uint16_t)fn);
    TG_OWN_SET(c->kind, (uint8_t)kind);
    TG_OWN_SET(c->inside, (uint8_t)1); /* a holding reader loads it alone (core/thread_hold.c) */
    TG_OWN_SET(c->device, (int32_t)dev);
    TG_OWN_SET(c->stream, (uint64_t)(uintptr_t)s);
    TG_OWN_SET(c->func, func);
    TG_OWN_SET(c->t_enter, now);
    TG_OWN_SET(c->t_exit, (uint64_t)0);
    TG_OWN_SET(c->nframes, (int32_t)nframes);
    for (int i = 0; i < nframes; i++)
        TG_OWN_SET(c->frames[i], frames[i]);
    tg__cuda_seq_end(c);
    if ((kind == TG_CUDA_SYNC || kind == TG_CUDA_MODULE) &&
        __builtin_expect(tg_opts.stress && t->nheld > 0, 0))
        tg__cuda_stress_hold(t, fn); /* stress=1: held before the real call */
    return t;
}

/* After the real call (t from tg__cuda_enter, non-NULL). */
static inline __attribute__((always_inline)) void tg__cuda_leave(struct tg_thread *t, int kind)
{
    if (kind == TG_CUDA_OTHER)
        return;
    struct tg_cuda_call *c = &t->last;
    uint64_t now = kind == TG_CUDA_LAUNCH ? c->t_enter : tg_ticks();
    tg__cuda_seq_begin(c);
    TG_OWN_SET(c->inside, (uint8_t)0);
    TG_OWN_SET(c->t_exit, now);
    tg__cuda_seq_end(c);
    /* A report on another thread wants this one held (core/thread_hold.h):
     * one plain load, on the line just written, after the store of inside
     * (the compiler keeps the order; the reader's barrier does the rest). */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&c->hold, __ATOMIC_RELAXED) != TG_HOLD_NONE, 0))
        tg_hold_park(t);
}

/* fork child: counters and caches start clean (cuda/cuda_record.c). */
void tg__cuda_record_atfork_child(void);

#endif
