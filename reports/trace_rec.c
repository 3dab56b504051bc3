/* The trace's recorder: see trace_rec.h.
 *
 * Ring protocol (one producer: the owning thread; one consumer: the trace
 * writer, under its mutex).  The producer announces the index it is about to fill in
 * `writing` (release fence), fills the slot with relaxed atomic stores, then
 * publishes `head` (release).  The consumer reads slots below head; after
 * copying slot i it re-reads `writing` behind an acquire fence, and if the
 * producer has started on index i + TG_TRACE_RING (same slot) the copy may be
 * torn and is discarded (counted as dropped).  Seqlock reasoning: a copy that
 * saw any store of the newer lap sees its `writing` announcement too. */
#include "reports/trace_rec.h"
#include "reports/trace.h"
#include "reports/tls.h"

#include <stdatomic.h>
#include <stddef.h>

_Static_assert((TG_TRACE_RING & (TG_TRACE_RING - 1)) == 0, "TG_TRACE_RING must be a power of 2");

/* Read by every CUDA hook: left in .bss, on no cache line that start-up
 * data shares, and not written where it stays 0 (tg_trace_configure), so
 * that its page costs nothing in a process that does not trace. */
int tg_trace_on;

struct tg__trace_slot {
    _Atomic uint64_t t0, t1;      /* CLOCK_MONOTONIC ns */
    _Atomic uint64_t stream, func;
    _Atomic uint64_t meta;        /* fn | kind << 16 | (uint32_t)device << 32 */
};

struct tg__trace_ring {
    _Atomic uint64_t head;        /* events published (producer) */
    _Atomic uint64_t writing;     /* index being filled + 1 (producer) */
    uint64_t tail;                /* next to read (consumer, under the mutex) */
    pid_t tid;                    /* owner, set before the ring is published */
    unsigned long ident;
    char pad[64];                 /* keep producer fields off the next ring's line */
    struct tg__trace_slot slot[TG_TRACE_RING];
};

/* Static (BSS): untouched pages cost nothing in processes that never trace. */
static struct tg__trace_ring tg__rings[TG_TRACE_RINGS];
static _Atomic int tg__nrings;                    /* claimed (may exceed TG_TRACE_RINGS) */
static _Atomic uint64_t tg__ringless_dropped;     /* events of threads without a ring */

/* ---- the producer: the CUDA hooks (any thread, GIL or not) ------------------ */

static struct tg__trace_ring *claim_ring(const struct tg_thread *t)
{
    int i = atomic_fetch_add_explicit(&tg__nrings, 1, memory_order_relaxed);
    if (i >= TG_TRACE_RINGS) {
        tg__no_ring = 1;
        return NULL;
    }
    struct tg__trace_ring *r = &tg__rings[i];
    r->tid = t->tid;
    r->ident = t->ident;
    /* owner fields before any head the consumer can see (release on head) */
    tg__my_ring = r;
    return r;
}

void tg_trace_cuda(const struct tg_thread *t, const struct tg_cuda_call *c, uint64_t t0, uint64_t t1)
{
    struct tg__trace_ring *r = tg__my_ring;
    if (__builtin_expect(!r, 0)) {
        if (tg__no_ring || !(r = claim_ring(t))) {
            atomic_fetch_add_explicit(&tg__ringless_dropped, 1, memory_order_relaxed);
            return;
        }
    }
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    atomic_store_explicit(&r->writing, h + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    struct tg__trace_slot *s = &r->slot[h & (TG_TRACE_RING - 1)];
    atomic_store_explicit(&s->t0, t0, memory_order_relaxed);
    atomic_store_explicit(&s->t1, t1, memory_order_relaxed);
    atomic_store_explicit(&s->stream, c->stream, memory_order_relaxed);
    atomic_store_explicit(&s->func, c->func, memory_order_relaxed);
    atomic_store_explicit(&s->meta,
                          (uint64_t)c->fn | (uint64_t)c->kind << 16 | (uint64_t)(uint32_t)c->device << 32,
                          memory_order_relaxed);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

/* ---- the consumer: the writer, under its mutex ------------------------------- */

static uint64_t drain_ring(struct tg__trace_ring *r, void (*fn)(const struct tg_trace_rec *, void *), void *arg)
{
    uint64_t lost = 0;
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t i = r->tail;
    if (h - i > TG_TRACE_RING) {
        lost += h - TG_TRACE_RING - i; /* overwritten before we came */
        i = h - TG_TRACE_RING;
    }
    for (; i < h; i++) {
        const struct tg__trace_slot *s = &r->slot[i & (TG_TRACE_RING - 1)];
        struct tg_trace_rec e = {.tid = r->tid};
        e.t0 = atomic_load_explicit(&s->t0, memory_order_relaxed);
        e.t1 = atomic_load_explicit(&s->t1, memory_order_relaxed);
        e.stream = atomic_load_explicit(&s->stream, memory_order_relaxed);
        e.func = atomic_load_explicit(&s->func, memory_order_relaxed);
        e.meta = atomic_load_explicit(&s->meta, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        uint64_t wr = atomic_load_explicit(&r->writing, memory_order_relaxed);
        if (wr > i + TG_TRACE_RING) { /* the producer lapped us on this slot */
            lost++;
            continue;
        }
        fn(&e, arg);
    }
    r->tail = h;
    return lost;
}

uint64_t tg_trace_rec_drain(void (*fn)(const struct tg_trace_rec *e, void *arg), void *arg)
{
    uint64_t lost = 0;
    int n = atomic_load_explicit(&tg__nrings, memory_order_relaxed);
    if (n > TG_TRACE_RINGS)
        n = TG_TRACE_RINGS;
    for (int i = 0; i < n; i++) {
        struct tg__trace_ring *r = &tg__rings[i];
        if (atomic_load_explicit(&r->head, memory_order_acquire) != r->tail)
            lost += drain_ring(r, fn, arg);
    }
    return lost + atomic_exchange_explicit(&tg__ringless_dropped, 0, memory_order_relaxed);
}

int tg_trace_rec_pending(void)
{
    int n = atomic_load_explicit(&tg__nrings, memory_order_relaxed);
    for (int i = 0; i < n && i < TG_TRACE_RINGS; i++)
        if (atomic_load_explicit(&tg__rings[i].head, memory_order_acquire) != tg__rings[i].tail)
            return 1;
    return 0;
}

void tg_trace_rec_atfork_child(void)
{
    int n = atomic_load(&tg__nrings);
    for (int i = 0; i < n && i < TG_TRACE_RINGS; i++) {
        atomic_store(&tg__rings[i].head, 0);
        atomic_store(&tg__rings[i].writing, 0);
        tg__rings[i].tail = 0;
    }
    atomic_store(&tg__nrings, 0);
    atomic_store(&tg__ringless_dropped, 0);
    tg__my_ring = NULL;
    tg__no_ring = 0;
}
