/* Whether other threads are alive, asked of the kernel at most every 100 ms
 * per thread: contended entries and exits check their occupants, and an
 * overlap of tuned calls must not cost a system call.  Whether another
 * thread's Python state can still be read.  Any attached thread, several
 * at once (a free-threaded build): the cache is one 64-bit word a slot,
 * stored and loaded whole. */
#include "guard/guard_internal.h"
#include "core/py_api.h"
#include "core/thread_state.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

/* tid -> when tgkill last said alive.  A thread that dies inside is found
 * at most 100 ms after its last check (and every waiter re-checks, uncached,
 * once a second).  Each slot one word: the tid in the high 32 bits, the
 * coarse clock in ms (mod 2^32) in the low 32, so that a reader never pairs
 * one thread's tid with another's time (a torn pair could call a dead
 * thread alive).  0: empty. */
#define TG_ALIVE_SLOTS 64
#define TG_ALIVE_FRESH_MS 100u
static uint64_t alive_cache[TG_ALIVE_SLOTS];

static uint32_t coarse_ms(void)
{
    struct timespec ts; /* vDSO, a few ns: no syscall */
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}

int tg__tid_alive_cached(pid_t tid)
{
    unsigned i = (unsigned)tid & (TG_ALIVE_SLOTS - 1);
    uint32_t now = coarse_ms();
    uint64_t w = __atomic_load_n(&alive_cache[i], __ATOMIC_RELAXED);
    if ((uint32_t)(w >> 32) == (uint32_t)tid && (uint32_t)(now - (uint32_t)w) < TG_ALIVE_FRESH_MS)
        return 1;
    int alive = tg_tid_alive(tid);
    if (alive)
        __atomic_store_n(&alive_cache[i], (uint64_t)(uint32_t)tid << 32 | now, __ATOMIC_RELAXED);
    return alive;
}

void tg__alive_atfork_child(void)
{
    memset(alive_cache, 0, sizeof alive_cache); /* the parent's threads; the only thread left */
}

void *tg__occupant_tstate(const struct tg_occupant *o)
{
    /* Py_FinalizeEx marks the runtime finalizing, then deletes the other
     * threads' states: freed on 3.9 to 3.13, cleared on 3.14 (their frames'
     * stack released; the thread keeps a reference).  Reading one after the
     * mark reads freed memory (a crash under PYTHONMALLOC=debug). */
    return o->tstate && !tg_py_finalizing() ? o->tstate : NULL;
}
