/* GPU-interval verdict for tuning interference: see detectors/gpu_overlap.h. */
#include "detectors/gpu_overlap.h"

#include <stdlib.h>
#include <string.h>

#define CORR_MASK (TG_GPU_CORR_SLOTS - 1u)

void tg_gpu_corr_enter(struct tg_gpu_corr *c, uint32_t corr, pid_t tid, uint64_t t_enter)
{
    struct tg_gpu_corr_slot *s = &c->slot[corr & CORR_MASK];
    /* seqlock-like: invalidate, fill, publish (readers re-check corr) */
    atomic_store_explicit(&s->corr, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
    atomic_store_explicit(&s->t_enter, t_enter, memory_order_relaxed);
    atomic_store_explicit(&s->t_exit, 0, memory_order_relaxed);
    atomic_store_explicit(&s->corr, corr, memory_order_release);
}

void tg_gpu_corr_exit(struct tg_gpu_corr *c, uint32_t corr, uint64_t t_exit)
{
    struct tg_gpu_corr_slot *s = &c->slot[corr & CORR_MASK];
    if (atomic_load_explicit(&s->corr, memory_order_relaxed) == corr)
        atomic_store_explicit(&s->t_exit, t_exit, memory_order_relaxed);
}

int tg_gpu_corr_get(const struct tg_gpu_corr *c, uint32_t corr, pid_t *tid, uint64_t *t_enter,
                    uint64_t *t_exit)
{
    if (corr == 0)
        return 0;
    const struct tg_gpu_corr_slot *s = &c->slot[corr & CORR_MASK];
    if (atomic_load_explicit(&s->corr, memory_order_acquire) != corr)
        return 0;
    pid_t t = atomic_load_explicit(&s->tid, memory_order_relaxed);
    uint64_t a = atomic_load_explicit(&s->t_enter, memory_order_relaxed);
    uint64_t b = atomic_load_explicit(&s->t_exit, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->corr, memory_order_relaxed) != corr)
        return 0; /* overwritten while we read */
    *tid = t;
    *t_enter = a;
    *t_exit = b;
    return 1;
}

int tg_gpu_correlate(const struct tg_gpu_corr *c, struct tg_gpu_kernel *k)
{
    pid_t tid;
    uint64_t a, b;
    if (!tg_gpu_corr_get(c, k->corr, &tid, &a, &b))
        return 0;
    k->tid = tid;
    k->launch = a;
    k->launch_end = b;
    return 1;
}

/* ---- intervals ------------------------------------------------------------------ */

static int cmp_ival(const void *a, const void *b)
{
    const struct tg_gpu_ival *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->hi < y->hi ? -1 : x->hi > y->hi);
}

size_t tg_gpu_merge(struct tg_gpu_ival *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_ival); /* report time only, never a hot path */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].hi <= v[i].lo)
            continue; /* empty */
        if (m && v[i].lo <= v[m - 1].hi) {
            if (v[i].hi > v[m - 1].hi)
                v[m - 1].hi = v[i].hi;
        } else {
            v[m++] = v[i];
        }
    }
    return m;
}

uint64_t tg_gpu_intersect(const struct tg_gpu_ival *a, size_t na, const struct tg_gpu_ival *b, size_t nb)
{
    uint64_t sum = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        uint64_t lo = a[i].lo > b[j].lo ? a[i].lo : b[j].lo;
        uint64_t hi = a[i].hi < b[j].hi ? a[i].hi : b[j].hi;
        if (hi > lo)
            sum += hi - lo;
        if (a[i].hi < b[j].hi)
            i++;
        else
            j++;
    }
    return sum;
}

/* Measure of [lo, hi) n u[0..nu) (sorted, disjoint). */
static uint64_t overlap_one(uint64_t lo, uint64_t hi, const struct tg_gpu_ival *u, size_t nu)
{
    struct tg_gpu_ival one = {lo, hi};
    /* binary search the first span ending after lo */
    size_t a = 0, b = nu;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (u[m].hi <= lo)
            a = m + 1;
        else
            b = m;
    }
    return tg_gpu_intersect(&one, 1, u + a, nu - a);
}

static int cmp_start(const void *a, const void *b)
{
    const struct tg_gpu_kernel *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int tg_gpu_verdict(struct tg_gpu_kernel *k, size_t n, const struct tg_gpu_window *w,
                   struct tg_gpu_ival *scratch, struct tg_gpu_verdict *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return -1;
    qsort(k, n, sizeof *k, cmp_start);
    /* own kernels: timed from max(launch, previous own end) to end */
    struct tg_gpu_ival *own = scratch;
    size_t nown = 0;
    uint64_t prev_end = 0, first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < n; i++) {
        const struct tg_gpu_kernel *x = &k[i];
        if (x->dev != w->dev || x->tid != w->tid || !x->launch || x->launch < w->t0 || x->launch > w->t1 ||
            x->end <= x->start)
            continue;
        uint64_t lo = x->launch > prev_end ? x->launch : prev_end;
        if (lo > x->start)
            lo = x->start; /* clocks disagree slightly: never later than it ran */
        own[nown].lo = lo;
        own[nown].hi = x->end;
        nown++;
        if (x->end > prev_end)
            prev_end = x->end;
        if (lo < first)
            first = lo;
        if (x->end > last)
            last = x->end;
    }
    out->own_kernels = (uint32_t)nown;
    if (nown == 0)
        return -1;
    nown = tg_gpu_merge(own, nown);
    for (size_t i = 0; i < nown; i++)
        out->timed_ns += own[i].hi - own[i].lo;
    /* foreign kernels on the device that ran inside the timed spans */
    struct tg_gpu_ival *fo = scratch + n;
    size_t nfo = 0;
    for (size_t i = 0; i < n; i++) {
        const struct tg_gpu_kernel *x = &k[i];
        if (x->dev != w->dev || (x->tid == w->tid && x->tid != 0) || x->end <= first || x->start >= last)
            continue;
        uint64_t ov = overlap_one(x->start, x->end, own, nown);
        if (ov == 0)
            continue;
        fo[nfo].lo = x->start;
        fo[nfo].hi = x->end;
        nfo++;
        out->foreign_kernels++;
        /* aggregate by (name, tid, stream); keep the biggest TG_GPU_MAX_BY */
        int j;
        for (j = 0; j < out->nby; j++)
            if (out->by[j].tid == x->tid && out->by[j].stream == x->stream && strcmp(out->by[j].name, x->name) == 0)
                break;
        if (j == out->nby) {
            if (out->nby < TG_GPU_MAX_BY) {
                out->nby++;
            } else {
                /* replace the smallest if this one is bigger */
                int s = 0;
                for (int q = 1; q < out->nby; q++)
                    if (out->by[q].overlap_ns < out->by[s].overlap_ns)
                        s = q;
                if (out->by[s].overlap_ns >= ov)
                    continue;
                j = s;
            }
            out->by[j].name = x->name;
            out->by[j].tid = x->tid;
            out->by[j].stream = x->stream;
            out->by[j].count = 0;
            out->by[j].overlap_ns = 0;
        }
        out->by[j].count++;
        out->by[j].overlap_ns += ov;
    }
    nfo = tg_gpu_merge(fo, nfo);
    out->overlap_ns = tg_gpu_intersect(own, nown, fo, nfo);
    out->skewed = out->overlap_ns > 0;
    /* most overlap first (insertion sort: at most 8) */
    for (int i = 1; i < out->nby; i++)
        for (int j = i; j > 0 && out->by[j].overlap_ns > out->by[j - 1].overlap_ns; j--) {
            __typeof__(out->by[0]) tmp = out->by[j];
            out->by[j] = out->by[j - 1];
            out->by[j - 1] = tmp;
        }
    return 0;
}
