/* Between serialize's two wait files: what every wait does
 * (guard/serialize_wait.c) and the wait for a tuner's lock
 * (guard/serialize_tuner_wait.c).  GIL held in every call. */
#ifndef TG_SERIALIZE_WAIT_INTERNAL_H
#define TG_SERIALIZE_WAIT_INTERNAL_H

#include "guard/serialize_wait.h"

/* Around the program's Python code that a wait of t's runs (its audit
 * hooks, its signal handlers, a property read for a kernel's name): t is
 * busy, as in tunerguard's own code (its hooks pass through), and open: a
 * guarded call made there is the program's, guarded as a call of t's
 * (guard/serialize_wait.c, "a call made inside a wait").  Not open: the Python code a
 * report runs under the report lock, where such a call, reporting, would
 * wait for the lock its own thread holds; it passes through.  GIL held. */
static inline void tg__program_code_begin(struct tg_thread *t)
{
    t->busy++;
    tg__gthread(t)->wait_open++;
}

static inline void tg__program_code_end(struct tg_thread *t)
{
    tg__gthread(t)->wait_open--;
    t->busy--;
}

/* t's wait for lock lk begins: into lk's FIFO.  GIL held. */
static inline void tg__fifo_join(struct tg_tuner *lk, struct tg_thread *t)
{
    tg_tuner_wait_push(lk, t);
    tg__gthread(t)->wait_lock = lk;
    tg__gthread(t)->wait_left = 0;
}

/* t's wait for lk ends: out of lk's FIFO, if still in it.  GIL held. */
static inline void tg__fifo_leave(struct tg_tuner *lk, struct tg_thread *t)
{
    tg_tuner_wait_remove(lk, t); /* no-op when out of it (tg__wait_away_begin) */
    tg__gthread(t)->wait_lock = NULL;
    tg__gthread(t)->wait_left = 0;
}

/* One count of the exit line's (tg__gstats): a relaxed atomic add, any
 * thread; waits of several threads end at once without the GIL. */
#define TG_GSTAT_ADD(field, v) __atomic_fetch_add(&tg__gstats.field, (v), __ATOMIC_RELAXED)

/* A wait of t's begins at t0: until tg__wait_done, the exit line counts it as
 * one still going (tg_guard_stats).  Any attached thread (TG_GSTAT_ADD). */
static inline void tg__wait_begin(struct tg_thread *t, uint64_t t0)
{
    TG_GSTAT_ADD(waiting, 1);
    TG_GSTAT_ADD(waiting_t0_sum, t0);
    if (!tg__gthread(t)->wait_call_counted)
        TG_GSTAT_ADD(waiting_calls, 1);
}

/* A waiter leaves u's FIFO without entering (a signal's exception): if the
 * lock was handed to it meanwhile, pass it on; if it was the one woken for
 * a free tuner, wake the next, so no wake-up is lost with it. */
void tg__abandon_wait(struct tg_tuner *u, struct tg_thread *t);

/* A wait of t's that began at t0 ends (held, proceeded, abandoned): its
 * time to the exit line's counts (and u's, for a tuner; NULL: the turn). */
void tg__wait_done(struct tg_tuner *u, struct tg_thread *t, uint64_t t0);

/* One blocked stretch of a wait for lock lk, the GIL released, until
 * deadline (ns): 1 with lk held, else 0 with *rc EINTR (a signal) or
 * ETIMEDOUT.  sliced: lk is the turn (its quiet slices). */
int tg__park_until(struct tg_tuner *lk, struct tg_thread *t, uint64_t deadline, uint64_t t0, int sliced,
                   int *rc);

/* Did a signal handler raise since the wait began, or (rc EINTR, or the
 * main thread) when the handlers run now?  Then the wait for lk is
 * abandoned and counted, and this returns 1. */
int tg__wait_interrupted(struct tg_tuner *lk, struct tg_thread *t, int rc, int main_thread, uint64_t t0);

/* inst's kernel name (else method, else its class's name) into the exit
 * line's contended list, once per name.  Reads Python attributes (the
 * program's code, inside t's wait). */
void tg__note_contended(struct tg_thread *t, PyObject *inst, const char *method);

#endif
