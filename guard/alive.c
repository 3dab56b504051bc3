/* Whether other threads are alive, asked of the kernel at most every 100 ms
 * per thread: contended entries and exits check their occupants, and an
 * overlap of tuned calls must not cost a system call.  Whether another
 * thread's Python state can still be read.  GIL held. */
#include "guard/guard_internal.h"
#include "core/py_api.h"
#include "core/thread_state.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

/* tid -> when tgkill last said alive.  A thread that dies inside is found
 * at most 100 ms after its last check (and every waiter re-checks, uncached,
 * once a second). */
#define TG_ALIVE_SLOTS 64
#define TG_ALIVE_FRESH_NS 100000000ull
static struct {
    pid_t tid;
    uint64_t at;
} alive_cache[TG_ALIVE_SLOTS];

static uint64_t coarse_ns(void)
{
    struct timespec ts; /* vDSO, a few ns: no syscall */
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int tg__tid_alive_cached(pid_t tid)
{
    unsigned i = (unsigned)tid & (TG_ALIVE_SLOTS - 1);
    uint64_t now = coarse_ns();
    if (alive_cache[i].tid == tid && now - alive_cache[i].at < TG_ALIVE_FRESH_NS)
        return 1;
    int alive = tg_tid_alive(tid);
    if (alive) {
        alive_cache[i].tid = tid;
        alive_cache[i].at = now;
    }
    return alive;
}

void tg__alive_atfork_child(void)
{
    memset(alive_cache, 0, sizeof alive_cache); /* the parent's threads */
}

void *tg__occupant_tstate(const struct tg_occupant *o)
{
    /* Py_FinalizeEx marks the runtime finalizing, then deletes the other
     * threads' states: freed on 3.9 to 3.13, cleared on 3.14 (their frames'
     * stack released; the thread keeps a reference).  Reading one after the
     * mark reads freed memory (a crash under PYTHONMALLOC=debug). */
    return o->tstate && !tg_py_finalizing() ? o->tstate : NULL;
}
