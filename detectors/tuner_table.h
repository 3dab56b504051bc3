/* Who is inside which tuner instance: the decision core of tunerguard.
 *
 * Pure logic: no I/O, no dlsym, no Python.  Locking contract: every function
 * here is called with the GIL held (all guarded calls enter and leave under
 * it), which orders all updates; the one exception is the serialize wait,
 * which reads `nocc` under tg_tuner_wait_mu (see shim/py_guard.c).  Entries
 * live in a fixed table and are never freed, so pointers to them stay valid. */
#ifndef TG_TUNER_TABLE_H
#define TG_TUNER_TABLE_H

#include <pthread.h>
#include <stdint.h>

#include "shim/thread_state.h"

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

/* Find the entry of `key`, creating it.  NULL when the table is full (the
 * caller then passes the call through unguarded; said once).  O(1) expected.
 * An entry is given back when its last occupant leaves with nobody waiting:
 * a pointer to it is valid only while someone is inside or waiting, so after
 * anything that may let other threads run, get it again. */
struct tg_tuner *tg_tuner_get(uintptr_t key);

/* The decision for thread t entering tuner u in `mode` (enum tg_mode). */
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
