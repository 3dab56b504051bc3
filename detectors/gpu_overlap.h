/* GPU-side truth for the tuning-interference verdict, pure logic:
 * no dlsym, no I/O, no lock, no allocation (callers hand in the arrays).
 *
 * Inputs come from the CUPTI backend (cuda/cupti_backend.c):
 *  - a correlation table, written by the launching thread from a CUPTI API
 *    callback (correlation id -> host tid, host launch time), read when the
 *    activity buffers are processed;
 *  - kernel execution records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), all
 *    timestamps in CLOCK_MONOTONIC ns (the backend registers a timestamp
 *    callback; otherwise it converts with a measured offset).
 *
 * The verdict (tg_gpu_verdict): thread T benchmarked on device D during the
 * host window [t0, t1].  Its own kernels are the kernels on D launched by T
 * with a host launch time inside the window.  Each own kernel k is "timed"
 * from max(launch(k), end of T's previous own kernel) -- when it was queued
 * behind its predecessor, which is where Triton's do_bench start event sits
 * -- to end(k): any foreign execution in that span either ran concurrently
 * with k or delayed it, and both inflate k's measured time.  The benchmark
 * is skewed when kernels on D launched by other threads (or by no known
 * thread) executed inside the union of those spans; overlap_ns is the
 * measure of (union of foreign executions) n (union of timed spans). */
#ifndef TG_GPU_OVERLAP_H
#define TG_GPU_OVERLAP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- correlation: CUPTI correlation id -> host launch --------------------- */

#define TG_GPU_CORR_SLOTS 65536 /* power of two; ids are sequential, slot = id & mask */

struct tg_gpu_corr_slot {
    _Atomic uint32_t corr;     /* 0: empty or being written */
    _Atomic int32_t tid;
    _Atomic uint64_t t_enter;  /* host CLOCK_MONOTONIC ns at the API entry */
    _Atomic uint64_t t_exit;   /* ... at its exit (0 until then) */
};
struct tg_gpu_corr {
    struct tg_gpu_corr_slot slot[TG_GPU_CORR_SLOTS];
};

/* Launching thread, API entry.  Relaxed stores, no RMW: one writer per id. */
void tg_gpu_corr_enter(struct tg_gpu_corr *c, uint32_t corr, pid_t tid, uint64_t t_enter);
/* Launching thread, API exit (ignored if the slot was reused meanwhile). */
void tg_gpu_corr_exit(struct tg_gpu_corr *c, uint32_t corr, uint64_t t_exit);
/* Any thread.  1 and *tid, *t_enter, *t_exit filled when id `corr` is still
 * in its slot (not overwritten by id corr + TG_GPU_CORR_SLOTS), else 0. */
int tg_gpu_corr_get(const struct tg_gpu_corr *c, uint32_t corr, pid_t *tid, uint64_t *t_enter,
                    uint64_t *t_exit);

/* ---- kernels ------------------------------------------------------------------- */

struct tg_gpu_kernel {
    uint64_t start, end;       /* execution, CLOCK_MONOTONIC ns */
    uint64_t launch;           /* host launch (API entry), 0: unknown */
    uint64_t launch_end;       /* host API exit, 0: unknown */
    uint32_t corr;             /* CUPTI correlation id */
    uint32_t stream;           /* CUPTI stream id */
    int32_t dev;
    pid_t tid;                 /* launching thread, 0: unknown (no correlation) */
    const char *name;          /* interned by the caller, never NULL */
};

/* Fill k's launch/tid from the correlation table.  Returns 1 if found. */
int tg_gpu_correlate(const struct tg_gpu_corr *c, struct tg_gpu_kernel *k);

struct tg_gpu_window {
    pid_t tid;                 /* the benchmarking thread */
    int dev;
    uint64_t t0, t1;           /* host window, CLOCK_MONOTONIC ns */
};

#define TG_GPU_MAX_BY 8
struct tg_gpu_verdict {
    uint32_t own_kernels;      /* own kernels found */
    uint32_t foreign_kernels;  /* foreign kernels with execution inside the timed spans */
    uint64_t timed_ns;         /* measure of the union of timed spans */
    uint64_t overlap_ns;       /* measure of foreign execution inside them */
    int skewed;                /* overlap_ns > 0 */
    int nby;                   /* entries in by[], most overlap first */
    struct {
        const char *name;      /* points into the caller's kernel names */
        pid_t tid;             /* 0: unknown launcher */
        uint32_t stream;
        uint32_t count;        /* kernels of that (name, tid, stream) */
        uint64_t overlap_ns;   /* their overlap (each against the spans; may sum past overlap_ns) */
    } by[TG_GPU_MAX_BY];
};

/* The verdict for window w over kernels k[0..n) (any order; k is sorted by
 * start in place).  scratch must hold 2*n intervals.  Returns 0, or -1 when
 * there is no own kernel in the window (no GPU evidence: out->own_kernels 0,
 * the caller keeps the launch-count verdict). */
struct tg_gpu_ival {
    uint64_t lo, hi;
};
int tg_gpu_verdict(struct tg_gpu_kernel *k, size_t n, const struct tg_gpu_window *w,
                   struct tg_gpu_ival *scratch, struct tg_gpu_verdict *out);

/* Measure of the intersection of two sorted, disjoint interval lists. */
uint64_t tg_gpu_intersect(const struct tg_gpu_ival *a, size_t na, const struct tg_gpu_ival *b, size_t nb);
/* Sort by lo and merge overlapping/touching intervals in place; returns the new count. */
size_t tg_gpu_merge(struct tg_gpu_ival *v, size_t n);

#endif
