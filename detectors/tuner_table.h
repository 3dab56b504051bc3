/* Who is inside which tuner instance: the decision core of tunerguard.
 *
 * Pure logic: no I/O, no dlsym, no Python.  Locking contract: every function
 * here is called with the GIL held (all guarded calls enter and leave under
 * it), which orders all updates; the one exception is the serialize wait,
 * which reads `nocc` under tg_tuner_wait_mu (see shim/session.c).  Entries
 * live in a fixed table and are never freed, so pointers to them stay valid. */
#ifndef TG_TUNER_TABLE_H
#define TG_TUNER_TABLE_H

#include <pthread.h>
#include <stdint.h>

#include "core/thread_state.h"

#define TG_TUNER_SLOTS 4096     /* distinct tuner instances tracked */
#define TG_TUNER_MAX_OCC 8      /* threads inside one instance at once (detect mode) */

struct tg_occupant {
    struct tg_thread *thread;   /* its record; valid only while the thread lives */
    pid_t tid;                  /* copied at entry: who it is, even after it died
                                   (its record's address may then be reused by a new thread) */
    unsigned long ident;        /* copied: threading's ident, for its name */
    void *tstate;               /* the thread's PyThreadState, for its Python stack */
    int depth;                  /* nested guarded calls of this thread on this instance */
    uint64_t entered_ns;
    const void *method;         /* the guard (method) of the outermost call */
    /* Set when this session overlapped another thread's session on the same
     * tuner (either side of a race), for the exception link. */
    pid_t raced_tid;            /* the other thread (copied: it may exit first) */
    char raced_name[48];
    uint64_t race_seq;          /* seq of the race report, 0 if none was written */
};

struct tg_tuner {
    uintptr_t key;              /* instance address; 0 = free slot */
    int nocc;                   /* threads inside */
    struct tg_occupant occ[TG_TUNER_MAX_OCC];
    int overflow;               /* occupants that did not fit (still counted in nocc) */
    int waiters;                /* threads blocked in serialize mode */
    pthread_cond_t cond;        /* signalled when nocc drops to 0 and waiters > 0 */
    int cond_ready;
    /* serialize mode's queue (fairness, see "The queue" below).  Written with
     * the GIL held, and under tg_tuner_wait_mu as well while waiters > 0. */
    uint32_t ticket_next;       /* the ticket the next queued thread takes */
    uint32_t ticket_turn;       /* the earliest ticket not yet served or skipped */
    int pinned;                 /* threads inside wait_for_tuner for this entry:
                                   the entry is not given back while > 0 */
    int starving;               /* a queued thread was passed over after waiting
                                   TG_TUNER_STARVE_NS: newcomers queue too */
    /* statistics */
    uint64_t sessions, races, waits, wait_ns;
};

enum tg_verdict {
    TG_NESTED,      /* this thread is already inside: depth, never a race */
    TG_FIRST,       /* nobody inside: enter */
    TG_RACE,        /* another thread is inside: report (detect) */
    TG_WAIT,        /* another thread is inside: wait (serialize) */
};

extern pthread_mutex_t tg_tuner_wait_mu;

/* The queue (serialize mode).  Without it a thread that calls a tuner in a
 * loop starves the others: it leaves, keeps the GIL, and re-enters before a
 * woken waiter gets the GIL back, so the waiter finds the tuner taken again
 * (seen on two H200s: one thread ran all its 18 calls while the other waited
 * 40 s).  The rule is sync.Mutex's from Go: newcomers may take a free tuner
 * ahead of queued threads (no hand-off per call: the GIL makes that costly)
 * until a queued thread that has waited TG_TUNER_STARVE_NS is passed over;
 * from then on newcomers queue too and the tuner goes to queued threads in
 * ticket order, until one that waited less than that enters or the queue is
 * empty.  Only threads that hold no tuner queue: a thread inside another
 * tuner waits only for this one to be free, as before, so queue order can
 * never close a cycle of waits (a thread holding nothing has no thread
 * waiting for what it holds).  A head of the queue that never comes for its
 * turn (a daemon thread ended at interpreter exit while it waited for the
 * GIL) is skipped after TG_TUNER_SKIP_NS of a free tuner; a skipped thread
 * that does come may still enter whenever the tuner is free. */
#define TG_TUNER_STARVE_NS 1000000ull
#define TG_TUNER_SKIP_NS 1000000000ull

/* Anyone waiting for u (queued or not)? */
static inline int tg_tuner_queue_empty(const struct tg_tuner *u)
{
    return u->pinned == 0;
}

/* A thread starts waiting for u: the entry stays in place (not given back)
 * until tg_tuner_unpin, whatever Python code runs meanwhile.  GIL held. */
void tg_tuner_pin(struct tg_tuner *u);
void tg_tuner_unpin(struct tg_tuner *u);

/* Take a ticket (a pinned thread holding no tuner).  GIL held. */
uint32_t tg_tuner_take_ticket(struct tg_tuner *u);

/* Must a waiter still wait?  queued: it holds `ticket`.  Reads only what
 * writers update under tg_tuner_wait_mu while waiters > 0, so it is valid
 * either with the GIL or under the mutex. */
static inline int tg_tuner_must_wait(const struct tg_tuner *u, uint32_t ticket, int queued)
{
    return u->nocc > 0 || (queued && (int32_t)(ticket - u->ticket_turn) > 0);
}

/* A waiter that woke and must still wait, having waited waited_ns so far:
 * marks the tuner starving when that is long.  GIL held. */
void tg_tuner_passed_over(struct tg_tuner *u, uint64_t waited_ns);

/* A waiter stops waiting and enters: its ticket is served, the turn moves on;
 * starving ends when it waited less than TG_TUNER_STARVE_NS or nobody is left
 * in the queue.  Call right before tg_tuner_enter.  GIL held. */
void tg_tuner_served(struct tg_tuner *u, uint32_t ticket, int queued, uint64_t waited_ns);

/* The head of the queue (the ticket whose turn it is, `turn`) did not come
 * for a free tuner for TG_TUNER_SKIP_NS: skip it, one ticket, and wake the
 * waiters.  No-op when the turn moved meanwhile.  GIL held. */
void tg_tuner_skip_head(struct tg_tuner *u, uint32_t turn);

/* Find the entry of `key`, creating it.  NULL when the table is full (the
 * caller then passes the call through unguarded and says so).  O(1) expected.
 * An entry is given back when its last occupant leaves with nobody waiting:
 * a pointer to it is valid only while someone is inside or waiting, so after
 * anything that may let other threads run, get it again. */
struct tg_tuner *tg_tuner_get(uintptr_t key);

/* The decision for thread t entering tuner u in `mode` (enum tg_mode).  In
 * serialize mode a free tuner is TG_WAIT for a thread holding no tuner while
 * the tuner is starving and threads are queued (the queue, above). */
enum tg_verdict tg_tuner_decide(const struct tg_tuner *u, const struct tg_thread *t, int mode);

/* Record t inside u (after TG_FIRST, TG_RACE or a finished wait), or one
 * level deeper (TG_NESTED).  Returns the occupant slot, or NULL on overflow;
 * a nested level of a thread without a slot returns NULL and must not be
 * left with tg_tuner_leave. */
struct tg_occupant *tg_tuner_enter(struct tg_tuner *u, struct tg_thread *t, void *tstate,
                                   const void *method, uint64_t now_ns, int nested);

/* t leaves one level.  Returns 1 when t's last level on u ended (its session
 * is over), 0 when it is still inside (nested).  Wakes serialize waiters when
 * the instance becomes free. */
int tg_tuner_leave(struct tg_tuner *u, struct tg_thread *t);

/* Another occupant than t (the thread "already inside"), or NULL. */
const struct tg_occupant *tg_tuner_other(const struct tg_tuner *u, const struct tg_thread *t);

/* Iterate over entries in use (for the summary): returns the next used
 * entry after *cursor (start with 0), or NULL. */
struct tg_tuner *tg_tuner_next(int *cursor);

/* serialize mode: would thread t waiting for u close a cycle of waits?
 * Follows u's occupants to the tuners they wait for (thread->waiting_for).
 * Returns the number of tuners on the cycle (u first) written to path, 0 if
 * there is none.  GIL held. */
int tg_tuner_wait_cycle(struct tg_tuner *u, const struct tg_thread *t, struct tg_tuner **path, int max);

/* Threads that left a tuner without returning (pthread_exit, a thread
 * destroyed under Python) stay registered.  Remove every occupant of u whose
 * thread `alive` says is gone (the predicate makes the syscall; this stays
 * pure), wake serialize waiters if u became free, and copy the dead tids and
 * idents out.  Returns how many were removed.  GIL held. */
int tg_tuner_reap(struct tg_tuner *u, int (*alive)(pid_t tid), pid_t *dead, unsigned long *dead_ident, int max);

/* After fork, in the child: nobody is inside anything, nobody waits. */
void tg_tuner_atfork_child(void);

#endif
