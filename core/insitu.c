/* The in-situ cost profile's table and its reader (core/insitu.h). */
#include "core/insitu.h"

#ifdef TG_INSITU
#include <stdatomic.h>

#include "core/clock.h"

#define TG_IS_THREADS 256
static struct tg_thread *_Atomic rows[TG_IS_THREADS];
static _Atomic int nrows;

/* A thread's first profiled call: its record joins the table (the record
 * lives as long as the thread; a dead thread's counts are lost, which the
 * benchmark's long-lived workers never are).  Past 256 threads: not counted. */
void tg__insitu_register(struct tg_thread *t)
{
    t->insitu_reg = 1;
    int i = atomic_fetch_add(&nrows, 1);
    if (i < TG_IS_THREADS)
        atomic_store(&rows[i], t);
}

/* Sum of column k over every thread; k == TG_IS_N: nanoseconds per 2^20
 * cycles of this machine's clock (the conversion, measured now).  Any
 * thread; the sums are racy reads of other threads' counters, exact at a
 * barrier (how the benchmark reads them). */
__attribute__((visibility("default"))) unsigned long long tunerguard_insitu(int k)
{
    if (k == TG_IS_N) {
        uint64_t now = tg_ticks();
        return (unsigned long long)(tg_ticks_to_ns(now) - tg_ticks_to_ns(now - (1u << 30))) >> 10;
    }
    if (k < 0 || k >= TG_IS_N)
        return 0;
    unsigned long long s = 0;
    int n = atomic_load(&nrows);
    for (int i = 0; i < n && i < TG_IS_THREADS; i++) {
        struct tg_thread *t = atomic_load(&rows[i]);
        if (t)
            s += __atomic_load_n(&t->insitu[k], __ATOMIC_RELAXED);
    }
    return s;
}
#endif
