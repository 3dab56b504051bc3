/* Tuning-interference detector: see detectors/interference.h. */
#include "detectors/interference.h"

#include <string.h>

_Atomic uint32_t tg_itf_bench[TG_ITF_MAXDEV];
/* tg_itf_self: detectors/tls.c (the loader holds every thread-local) */

struct tg_itf_sample {
    _Atomic uint64_t key;   /* mix(tid, func) | 1; 0 = free */
    _Atomic int32_t tid;
    _Atomic uint64_t func;
    _Atomic uint64_t last;  /* launch index (1-based) when last seen */
};

/* One device: its own cache lines (launchers on different devices never
 * share a written line). */
struct tg_itf_dev {
    _Atomic uint64_t launches;  /* launches on the device while a benchmark ran */
    struct tg_itf_sample samples[TG_ITF_SAMPLES];
} __attribute__((aligned(64)));

static struct tg_itf_dev tg_itf_devs[TG_ITF_MAXDEV];

static uint64_t mix(pid_t tid, uint64_t func)
{
    uint64_t k = func * 0x9E3779B97F4A7C15ull ^ ((uint64_t)(uint32_t)tid * 0xC2B2AE3D27D4EB4Full);
    k ^= k >> 29;
    return k | 1;
}

void tg_itf_begin(int dev)
{
    struct tg_itf_thread *s = &tg_itf_self;
    if (s->dev1 || dev < 0 || dev >= TG_ITF_MAXDEV)
        return;
    struct tg_itf_dev *d = &tg_itf_devs[dev];
    if (atomic_fetch_add_explicit(&tg_itf_bench[dev], 1, memory_order_acq_rel) == 0) {
        /* first benchmark on the device: forget samples of earlier windows
         * (best effort: a launcher may be filling a slot right now) */
        for (int i = 0; i < TG_ITF_SAMPLES; i++)
            atomic_store_explicit(&d->samples[i].key, 0, memory_order_relaxed);
    }
    s->dev1 = dev + 1;
    s->own = 0;
    s->func = 0;
    /* after the bench count is visible: every later launch on dev is counted */
    s->start = atomic_load_explicit(&d->launches, memory_order_acquire);
}

int tg_itf_launch(int dev, pid_t tid, uint64_t func)
{
    if (dev < 0 || dev >= TG_ITF_MAXDEV ||
        atomic_load_explicit(&tg_itf_bench[dev], memory_order_relaxed) == 0)
        return 0; /* aliased index, or the benchmark just ended */
    struct tg_itf_dev *d = &tg_itf_devs[dev];
    struct tg_itf_thread *s = &tg_itf_self;
    int own = s->dev1 == dev + 1;
    if (own) {
        s->own++;
        s->func = func;
    }
    uint64_t idx = atomic_fetch_add_explicit(&d->launches, 1, memory_order_relaxed) + 1;
    /* sample (tid, func): probe 4 slots; a full neighbourhood drops the
     * sample (the count above stays exact) */
    uint64_t key = mix(tid, func);
    unsigned h = (unsigned)(key >> 32);
    for (int p = 0; p < 4; p++) {
        struct tg_itf_sample *e = &d->samples[(h + (unsigned)p) % TG_ITF_SAMPLES];
        uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
        if (k == 0) {
            uint64_t zero = 0;
            if (!atomic_compare_exchange_strong_explicit(&e->key, &zero, key, memory_order_relaxed,
                                                         memory_order_relaxed)) {
                if (zero != key)
                    continue;
            } else {
                atomic_store_explicit(&e->tid, tid, memory_order_relaxed);
                atomic_store_explicit(&e->func, func, memory_order_relaxed);
            }
            k = key;
        }
        if (k == key) {
            atomic_store_explicit(&e->last, idx, memory_order_release);
            break;
        }
    }
    return !own;
}

int tg_itf_end(pid_t tid, struct tg_itf_result *out)
{
    struct tg_itf_thread *s = &tg_itf_self;
    if (!s->dev1)
        return 0;
    int dev = s->dev1 - 1;
    struct tg_itf_dev *d = &tg_itf_devs[dev];
    memset(out, 0, sizeof *out);
    out->dev = dev;
    out->func = s->func;
    out->own = s->own;
    uint64_t now = atomic_load_explicit(&d->launches, memory_order_acquire);
    uint64_t total = now - s->start;
    out->foreign = total > s->own ? total - s->own : 0;
    for (int i = 0; i < TG_ITF_SAMPLES && out->nsamples < TG_ITF_MAX_FOREIGN && out->foreign; i++) {
        struct tg_itf_sample *e = &d->samples[i];
        if (!atomic_load_explicit(&e->key, memory_order_relaxed) ||
            atomic_load_explicit(&e->last, memory_order_acquire) <= s->start)
            continue;
        pid_t etid = atomic_load_explicit(&e->tid, memory_order_relaxed);
        if (etid == 0 || etid == tid)
            continue;
        out->samples[out->nsamples].tid = etid;
        out->samples[out->nsamples].func = atomic_load_explicit(&e->func, memory_order_relaxed);
        out->nsamples++;
    }
    out->last_out = atomic_fetch_sub_explicit(&tg_itf_bench[dev], 1, memory_order_acq_rel) == 1;
    memset(s, 0, sizeof *s);
    return 1;
}

void tg_itf_atfork_child(void)
{
    for (int i = 0; i < TG_ITF_MAXDEV; i++)
        atomic_store_explicit(&tg_itf_bench[i], 0, memory_order_relaxed);
    memset(&tg_itf_self, 0, sizeof tg_itf_self);
}
