/* Per-thread recording state of the CUDA hooks: counter slots, the device
 * cache and its slow path.  The inline hot path is cuda/cuda_record.h. */
#include "cuda/cuda_record.h"
#include "cuda/listener.h"

#include <string.h>

_Atomic uint64_t tg__cuda_counts[TG_CUDA_SLOTS][TG_CUDA_ROW] __attribute__((aligned(64)));
/* tg__devcache: cuda/tls.c (the loader holds every thread-local) */
static _Atomic int tg__cuda_next_slot;

_Atomic uint32_t tg__tuning_epoch; /* cuda/cuda_hooks.h */
const struct tg_cuda_listener *tg__cuda_listener; /* cuda/listener.h */
_Atomic uint32_t tg__cuda_gen = 1; /* never 0: an empty entry (gen 0) never hits */
struct tg__cuda_support tg__cuda_sup;

/* First recorded call of a thread: one atomic add, no allocation.  Slots are
 * never given back (a dead thread's counts stay in the totals). */
int tg__cuda_claim_slot(struct tg_thread *t)
{
    int s = atomic_fetch_add_explicit(&tg__cuda_next_slot, 1, memory_order_relaxed);
    if (s >= TG_CUDA_SLOTS - 1) {
        s = TG_CUDA_SLOTS - 1; /* shared: written with atomic adds */
        atomic_store_explicit(&tg__cuda_next_slot, TG_CUDA_SLOTS, memory_order_relaxed);
    }
    t->cuda_row = s + 1;
    return s;
}

unsigned long long tg_cuda_count(unsigned fn)
{
    if (fn >= TG_CUDA_NFN)
        return 0;
    unsigned long long n = 0;
    for (int s = 0; s < TG_CUDA_SLOTS; s++)
        n += atomic_load_explicit(&tg__cuda_counts[s][fn], memory_order_relaxed);
    return n;
}

/* Cache miss: once per (thread, stream or context) until a stream is
 * destroyed.  Driver calls through the real pointers, busy raised so that
 * nothing they do is recorded.  -1 when the driver cannot say (and that is
 * cached too, so a failing handle costs the driver calls once). */
int tg__cuda_device_miss(struct tg_thread *t, uint64_t key, CUstream s, CUcontext ctx)
{
    CUresult (*get_ctx)(CUstream, CUcontext *) = TG__SUP(stream_get_ctx);
    CUresult (*get_dev)(CUdevice *) = TG__SUP(ctx_get_device);
    CUresult (*get_dev2)(CUdevice *, CUcontext) = TG__SUP(ctx_get_device_v2);
    CUresult (*get_current)(CUcontext *) = TG__SUP(ctx_get_current);

    int dev = -1;
    t->busy++;
    if (!ctx && get_ctx && get_ctx(s, &ctx) != CUDA_SUCCESS)
        ctx = NULL;
    if (ctx) {
        CUdevice d;
        CUcontext cur = NULL;
        if (get_dev2) {
            if (get_dev2(&d, ctx) == CUDA_SUCCESS)
                dev = d;
        } else if (get_dev && get_current &&
                   get_current(&cur) == CUDA_SUCCESS && cur == ctx) {
            if (get_dev(&d) == CUDA_SUCCESS)
                dev = d;
        }
    }
    t->busy--;

    struct tg__devcache_entry *e = &tg__devcache[(key >> 4 ^ key >> 10) % TG_CUDA_DEVCACHE];
    e->key = key;
    e->gen = atomic_load_explicit(&tg__cuda_gen, memory_order_relaxed);
    e->dev = dev;
    return dev;
}

int tg_cuda_current_device(void)
{
    if (!tg_cuda_active())
        return -1; /* never load libcuda for this: the program has not */
    CUresult (*get_current)(CUcontext *) = TG__SUP(ctx_get_current);
    CUresult (*get_dev)(CUdevice *) = TG__SUP(ctx_get_device);
    CUcontext cur = NULL;
    CUdevice d;
    int dev = -1;
    struct tg_thread *t = tg__self();
    t->busy++; /* nothing the driver does for us is recorded */
    if (get_current && get_dev && get_current(&cur) == CUDA_SUCCESS && cur && get_dev(&d) == CUDA_SUCCESS)
        dev = d;
    t->busy--;
    return dev;
}

/* fork child (only the forking thread survives): counts restart at zero, the
 * device cache is invalidated (handles of the parent's streams are the
 * child's now too, but the driver state after fork is not to be trusted). */
void tg__cuda_record_atfork_child(void)
{
    for (int s = 0; s < TG_CUDA_SLOTS; s++)
        for (int f = 0; f < TG_CUDA_NFN; f++)
            atomic_store_explicit(&tg__cuda_counts[s][f], 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&tg__cuda_gen, 1, memory_order_relaxed);
}

/* ---- queries every part of the CUDA side makes (cuda/cuda_hooks.h) ------------ */

/* Set once the driver's functions are resolved (cuda/cuda_hooks.c). */
_Atomic int tg__cuda_ready;

int tg_cuda_active(void)
{
    return atomic_load_explicit(&tg__cuda_ready, memory_order_acquire);
}

const char *tg_cuda_kernel_name(unsigned long long func, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    buf[0] = '\0';
    if (!func || !tg_cuda_active())
        return buf;
    CUresult (*fget)(const char **, CUfunction) = TG__SUP(func_get_name);
    CUresult (*kget)(const char **, CUkernel) = TG__SUP(kernel_get_name);
    const char *name = NULL;
    struct tg_thread *t = tg__self();
    t->busy++; /* nothing the driver does for us is recorded */
    if (fget && fget(&name, (CUfunction)(uintptr_t)func) != CUDA_SUCCESS)
        name = NULL;
    if (!name && kget && kget(&name, (CUkernel)(uintptr_t)func) != CUDA_SUCCESS)
        name = NULL;
    t->busy--;
    if (name) {
        size_t len = strnlen(name, n - 1);
        memcpy(buf, name, len);
        buf[len] = '\0';
    }
    return buf;
}

/* The seqlock's copy: each field a relaxed atomic load (its writer may be
 * mid-update; the counter decides whether the copy is kept). */
#define RLD(f) __atomic_load_n(&c->f, __ATOMIC_RELAXED)
static void copy_racy(struct tg_cuda_call *out, const struct tg_cuda_call *c)
{
    out->seq = RLD(seq);
    out->fn = RLD(fn);
    out->kind = RLD(kind);
    out->inside = RLD(inside);
    out->device = RLD(device);
    out->hold = 0; /* not part of the call */
    out->stream = RLD(stream);
    out->func = RLD(func);
    out->t_enter = RLD(t_enter);
    out->t_exit = RLD(t_exit);
    int32_t n = RLD(nframes);
    n = n < 0 ? 0 : n > TG_MAX_NATIVE_FRAMES ? TG_MAX_NATIVE_FRAMES : n;
    out->nframes = n;
    for (int i = 0; i < n; i++)
        out->frames[i] = RLD(frames[i]);
}
#undef RLD

int tg_cuda_call_read(const struct tg_thread *th, struct tg_cuda_call *out)
{
    for (int tries = 0; tries < 100; tries++) {
        uint32_t s0 = __atomic_load_n(&th->last.seq, __ATOMIC_ACQUIRE);
        if (s0 & 1)
            continue; /* the owner is mid-update: it never waits for us */
        copy_racy(out, &th->last);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&th->last.seq, __ATOMIC_RELAXED) == s0) {
            if (out->t_enter)
                out->t_enter = tg_ticks_to_ns(out->t_enter);
            if (out->t_exit)
                out->t_exit = tg_ticks_to_ns(out->t_exit);
            return 1;
        }
    }
    memset(out, 0, sizeof *out);
    return 0;
}
