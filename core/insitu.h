/* The in-situ cost profile: a diagnostic build (cmake -DTG_INSITU=ON), never
 * the shipped one.  It counts, in the program's own run (its caches, its
 * threads on other CPUs, its GIL hand-offs), the cycles tunerguard's own part
 * of each guarded call and of each recorded CUDA call takes: the guard's wall
 * time less the time spent in the original, the hook's wall time less the
 * real driver call's.  A microbenchmark (bench/guard_bench.py) measures the
 * same code on a quiet line; this tells what it costs where the cost is
 * judged.  Read with tunerguard_insitu() (core/insitu.c), exported by the
 * core library of that build only.
 *
 * Each thread adds to its own row (struct tg_thread's insitu[], registered
 * once in a fixed table): no atomic, no shared line written per call. */
#ifndef TG_INSITU_H
#define TG_INSITU_H

#include <stdint.h>

enum {
    TG_IS_GCALLS, /* guarded calls */
    TG_IS_GOWN,   /* cycles in the guard outside the original */
    TG_IS_GORIG,  /* cycles in the original (the tuner's own Python) */
    TG_IS_HCALLS, /* recorded CUDA calls (hooks that did not pass straight through) */
    TG_IS_HOWN,   /* cycles in the hook outside the real driver call */
    TG_IS_HREAL,  /* cycles in the real driver call */
    TG_IS_N = 8
};

#ifdef TG_INSITU
#include "core/clock.h"
#include "core/thread_state.h"

void tg__insitu_register(struct tg_thread *t);
static inline void tg__insitu_add(struct tg_thread *t, int k, uint64_t v)
{
    if (__builtin_expect(!t->insitu_reg, 0))
        tg__insitu_register(t);
    t->insitu[k] += v;
}
#define TG_IS_TICKS() tg_ticks()
#endif

#endif
