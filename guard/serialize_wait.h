/* serialize's waits (guard/serialize_wait.c; the wait for a tuner's lock,
 * guard/serialize_tuner_wait.c), for the guarded call (guard/session.c).
 * GIL held in every call; the waits release it while they block. */
#ifndef TG_SERIALIZE_WAIT_H
#define TG_SERIALIZE_WAIT_H

#include "guard/guard_internal.h"
#include "core/clock.h"
#include "core/park.h"

/* The turn (serialize_wait.c, "the turn"): the outermost guarded call of a
 * thread takes it before its tuner's lock.  A thread waits for it at most
 * TG_TURN_BYPASS_NS, then goes on without it; while others wait, it passes
 * in slices of TG_TURN_SLICE_NS (detectors/tuner_table.h, "Slices"). */
#define TG_TURN_BYPASS_NS 100000000ull
#ifndef TG_TURN_SLICE_NS /* -D for builds measured side by side (bench/serialize_bench.py --extra) */
#define TG_TURN_SLICE_NS 5000000ull
#endif
/* The FIFO's head looks at the turn at least this often while it waits
 * (tg__park_until): a quiet holder that stopped calling tuned kernels inside its
 * slice leaves the turn free for at most this long, however long the slice.
 * With the default slice the two are one; a build with a longer slice
 * (fewer hand-offs: docs/benchmarks.md) keeps this bound and
 * pays only these timed wake-ups of the head, each a futex time-out and a
 * CAS without the GIL. */
#ifndef TG_TURN_LOOK_NS
#define TG_TURN_LOOK_NS (TG_TURN_SLICE_NS < 5000000ull ? TG_TURN_SLICE_NS : 5000000ull)
#endif
extern struct tg_tuner tg__turn;

/* A thread that gave the turn up while others waited and takes it back
 * within this long ... is "quiet" (serialize_wait.c, "Quiet slices"): about
 * what a woken thread needs to run at all, so waking the head for such a
 * gap buys nothing. */
#define TG_TURN_QUIET_GAP_NS 50000ull
/* ... every time, its last this many times: one long gap in each step of a
 * loop (a step of two tuned calls, then other work) is not quiet. */
#define TG_TURN_QUIET_AFTER 8

/* The guarded call's first try for the turn (the outermost call, before
 * any wait): one CAS; after a release of t's under contention, also one
 * clock read, to learn whether t comes back soon (quiet).  GIL held. */
static inline int tg__try_turn(struct tg_thread *t)
{
    if (!tg_tuner_try_lock(&tg__turn, (uint32_t)t->tid))
        return 0;
    if (__builtin_expect(tg__gthread(t)->turn_released_ns != 0, 0)) {
        if (tg_mono_ns() - tg__gthread(t)->turn_released_ns < TG_TURN_QUIET_GAP_NS)
            tg__gthread(t)->turn_short += tg__gthread(t)->turn_short < TG_TURN_QUIET_AFTER;
        else
            tg__gthread(t)->turn_short = 0; /* a long gap: its releases wake the head again */
        tg__gthread(t)->turn_released_ns = 0;
    }
    return 1;
}

/* Give the turn up if t holds it (no-op otherwise), handing it to the FIFO's
 * head when t's slice is over.  GIL held.  Not held (detect, a thread that
 * went on without it): one load.  Held, nobody waiting: two loads and a
 * store, no clock.  Held with waiters: one clock read, and a wake-up (a
 * syscall) where the turn is handed over (once a slice) or where t was not
 * quiet last time; a quiet holder's releases inside its slice wake nobody
 * (serialize_wait.c, "Quiet slices"). */
static inline void tg__release_turn(struct tg_thread *t)
{
    if (__atomic_load_n(&tg__turn.owner, __ATOMIC_RELAXED) != (uint32_t)t->tid)
        return;
    uint64_t now = 0;
    if (__builtin_expect(tg__turn.wq_head != NULL, 0)) {
        now = tg_mono_ns(); /* contended: one clock read */
        tg_tuner_slice_check(&tg__turn, t, now);
    }
    struct tg_thread *w = tg_tuner_unlock(&tg__turn, t);
    if (__builtin_expect(w != NULL, 0)) {
        if (tg__gthread(t)->turn_short < TG_TURN_QUIET_AFTER ||
            __atomic_load_n(&tg__turn.owner, __ATOMIC_RELAXED) == (uint32_t)w->tid)
            tg_park_wake(&w->park); /* handed over, or t tends to stay away: w may use the gap */
        tg__gthread(t)->turn_released_ns = now ? now : 1;
    }
}

/* Give u's lock up if t holds it, waking the next waiter (the FIFO's head).
 * GIL held. */
static inline void tg__unlock_tuner(struct tg_tuner *u, struct tg_thread *t)
{
    struct tg_thread *w = tg_tuner_unlock(u, t);
    if (__builtin_expect(w != NULL, 0))
        tg_park_wake(&w->park);
}

/* Block for the turn, at most TG_TURN_BYPASS_NS: 1 with it, 0 gone on
 * without it, -1 when a signal handler raised (nothing held).  method: the
 * guarded method called ("Autotuner.run"), for the exit line's contended
 * list when the tuner has no kernel name; NULL: its class's name. */
int tg__wait_for_turn(struct tg_thread *t, PyObject *inst, const char *method);

/* Block until t holds u's lock: 1 held, 0 t proceeds unserialized (a cycle
 * of waits; past wait_timeout, a holder blocked outside tunerguard), -1 a
 * signal handler raised (nothing held). */
int tg__wait_for_tuner(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g);

/* A guarded call made by the program's Python code run inside t's own
 * wait (tg__gthread(t)->wait_open: a signal handler, an audit hook) is guarded as a
 * call of t's (serialize_wait.c, "a call made inside a wait"): begin takes
 * t out of the wait's FIFO and saves what the wait keeps on t, the call is
 * guarded, end puts that back (the wait goes back in at the FIFO's tail
 * when it parks again). */
struct tg_wait_away {
    struct tg_tuner *lk; /* the lock the interrupted wait is for */
    void *waiting_for;
    int busy, open, counted;
    int had_turn;        /* it held the turn (a wait for its tuner) */
};
void tg__wait_away_begin(struct tg_thread *t, struct tg_wait_away *w);
void tg__wait_away_end(struct tg_thread *t, const struct tg_wait_away *w);

/* Release the holds of threads that died inside u (reported); how many. */
int tg__reap_dead(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                  int (*alive)(pid_t));

/* fork child: no turn holder, no waiter, no contended kernel, no cache. */
void tg__serialize_atfork_child(void);

#endif
