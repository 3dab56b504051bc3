/* What the CUDA side hands the guard side: the one interface between them.
 *
 * The CUDA hooks see benchmarking (a session's second launch, its first
 * synchronize) and the process's first use of CUDA; what that means for a
 * tuner session is the guard's business (guard/session.c, guard/lifecycle.c).
 * The guard registers its calls once, when the core is bound
 * (guard/core_entry.c), before any hook of the core can run; until then the
 * hooks call nothing.  The epoch of tuning evidence is the CUDA side's own
 * counter, read by the guard (cuda/cuda_hooks.h, tg__tuning_epoch). */
#ifndef TG_CUDA_LISTENER_H
#define TG_CUDA_LISTENER_H

#include <stdint.h>

struct tg_thread;

struct tg_cuda_listener {
    /* Benchmarking evidence (bit: TG_EV_*) in t's unregistered session:
     * any thread's own hook, without the GIL; no allocation, no lock. */
    void (*lazy_evidence)(struct tg_thread *t, uint8_t bit);
    /* The process's first CUDA use or benchmark: from now on a fork child
     * has state to reset.  Cheap after the first call (one atomic load). */
    void (*arm_fork)(void);
};

/* Registered once (the guard, at binding); read by every hook after. */
extern const struct tg_cuda_listener *tg__cuda_listener;

static inline void tg_cuda_listen(const struct tg_cuda_listener *l)
{
    __atomic_store_n(&tg__cuda_listener, l, __ATOMIC_RELEASE);
}

static inline void tg__cuda_tell_evidence(struct tg_thread *t, uint8_t bit)
{
    const struct tg_cuda_listener *l = __atomic_load_n(&tg__cuda_listener, __ATOMIC_ACQUIRE);
    if (l)
        l->lazy_evidence(t, bit);
}

static inline void tg__cuda_tell_first_use(void)
{
    const struct tg_cuda_listener *l = __atomic_load_n(&tg__cuda_listener, __ATOMIC_ACQUIRE);
    if (l)
        l->arm_fork();
}

#endif
