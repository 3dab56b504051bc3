/* Who is inside which tuner instance: the decision core of tunerguard.
 *
 * Pure logic: no I/O, no dlsym, no Python.  Locking contract: every function
 * here is called with the GIL held (all guarded calls enter and leave under
 * it), which orders all updates; the one exception is serialize's lock
 * (`owner`, `starving`: atomics, taken by a woken waiter without the GIL;
 * "The lock" below).  A free-threaded build has no GIL to order them: there
 * each entry's fields are guarded by its entry lock ("The entry lock"
 * below).  Entries live in a fixed table and are never freed, so pointers
 * to them stay valid. */
#ifndef TG_TUNER_TABLE_H
#define TG_TUNER_TABLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/py_api.h"
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
    int stepped;                /* this session entered the tuner's tuning step
                                   (a declared tuner's, tuning=); GIL held */
    /* Set when this session overlapped another thread's session on the same
     * tuner (either side of a race), for the exception link. */
    pid_t raced_tid;            /* the other thread (copied: it may exit first) */
    char raced_name[48];
    uint64_t race_seq;          /* seq of the race report, 0 if none was written */
} __attribute__((aligned(64))); /* a slot on lines of its own: its thread enters and leaves
                                   writing them (clear_occ clears the whole slot), and a
                                   neighbour's slot sharing a line took it from that thread's
                                   CPU at every call of the other */

struct tg_tuner {
    /* The line every guarded call on this tuner reads and writes: with
     * several threads inside, each call finds it last written on another
     * CPU, so what a call needs of the others is here, not in their slots. */
    uintptr_t key;              /* instance address; 0 = free slot */
    int nocc;                   /* threads inside, those without a slot included
                                   (tg_tuner_overflow: nocc less the slots in use) */
    uint32_t lock;              /* the entry lock ("The entry lock" below) */
    pid_t occ_tid[TG_TUNER_MAX_OCC]; /* occ[i].tid while occ[i] is in use, else 0:
                                   the slots' directory (scans read this line only) */
    /* The occupants' benchmarking evidence (TG_EV_*), slot by slot: set at
     * entry and by the occupant itself when its session shows it
     * (tg_tuner_mark_evidence, on every tuner it holds; from the CUDA hooks
     * too, without the GIL: relaxed byte stores), read by an entering thread
     * for the severity of its overlap: every occupant's on this one line. */
    union {
        uint8_t occ_ev[TG_TUNER_MAX_OCC];
        uint64_t occ_ev_all; /* all eight at once: 0 when no occupant shows evidence */
    };
    uint64_t overlaps;          /* low-severity overlaps entering it (detect, verbosity 0):
                                   counted here, on the line the entry writes anyway, not on
                                   a process-wide counter every thread's entry would move
                                   (tg_tuner_overlaps sums them; they stay with the slot
                                   when the entry is given back) */
    struct tg_occupant occ[TG_TUNER_MAX_OCC];
    /* serialize mode's lock ("The lock" below) */
    uint32_t owner;             /* tid of the thread holding it, 0 when free:
                                   taken by CAS, with or without the GIL */
    uint32_t starving;          /* unlock hands over to the FIFO's head (atomic):
                                   a tuner's waiter was passed over after waiting
                                   TG_TUNER_STARVE_NS, or (slices) the holder's
                                   slice is over */
    struct tg_thread *wq_head, *wq_tail; /* FIFO of waiting threads (the entry lock;
                                   wq_head also read without it: tg_tuner_is_head) */
    int waiters;                /* threads in it (the entry lock; read without it
                                   as a hint) */
    uint64_t slice_end;         /* slices ("Slices" below; the turn only): when
                                   the holder's slice ends (ns; written with the
                                   GIL, read by a parked head without it) */
    /* statistics (the entry lock: tg_tuner_count_wait) */
    uint64_t waits, wait_ns;
    int noted;                  /* its kernel is in the summary's contended list */
} __attribute__((aligned(64)));

/* Evidence bits of an occupant's session (occ_ev): TG_EV_TUNING, it is in
 * or entered a tuning method, or synchronized; TG_EV_LAUNCHES, it launched
 * twice (evidence at entry, not at return: a config's pre_hook launches).
 * Set whenever the record shows it and kept until the slot is left, so they
 * are where evidence may be, never less: no bit, no evidence (the record
 * need not be read); a bit is confirmed on the record (tuning returns to 0
 * when a warmup ends). */
#define TG_EV_TUNING 1u
#define TG_EV_LAUNCHES 2u
/* Its session is nested deeper than held[] keeps (TG_MAX_HELD tuners): it
 * cannot mark this slot later, so the slot's bits are only what it entered
 * with and its record is the truth (read as before). */
#define TG_EV_UNTRACKED 4u

/* Is t tuning, by its record: inside a tuning method or a tuning entry
 * point (tuning), or its session entered one (session_tuned) or
 * synchronized (session_syncs).  The one test of it: the evidence bits
 * below, a session's entry (guard/session.c) and the race checks and views
 * (guard/race_decide.c, guard/thread_view.c: they add launches and, where
 * no tuning method is marked, the Python frames: tg_tuning_frame,
 * core/builtin_tuners.h).
 * The owner, or another thread reading the owner's evidence line: relaxed
 * loads (a hint; without the GIL the owner changes them meanwhile, and its
 * stores are to be relaxed atomics too: docs/free-threading.md). */
static inline int tg_thread_tuning(const struct tg_thread *t)
{
    return __atomic_load_n(&t->tuning, __ATOMIC_RELAXED) > 0 ||
           __atomic_load_n(&t->session_tuned, __ATOMIC_RELAXED) ||
           __atomic_load_n(&t->session_syncs, __ATOMIC_RELAXED) > 0;
}

/* The evidence bits t's session shows now (its record's fields). */
static inline uint8_t tg_thread_evidence(const struct tg_thread *t)
{
    return (uint8_t)((tg_thread_tuning(t) ? TG_EV_TUNING : 0) |
                     (__atomic_load_n(&t->session_multi, __ATOMIC_RELAXED) ? TG_EV_LAUNCHES : 0));
}

_Static_assert(TG_TUNER_MAX_OCC == sizeof(uint64_t), "occ_ev_all covers every slot's bits");
_Static_assert(offsetof(struct tg_tuner, lock) < 64, "the entry lock is on the line every call writes");

/* Occupants of u without a slot (more threads inside than it has slots):
 * counted in nocc, not in the directory.  Exact under the entry lock (or
 * the GIL); without either a hint, never below 0. */
static inline int tg_tuner_overflow(const struct tg_tuner *u)
{
    int used = 0; /* relaxed loads: read without the lock too (a hint there) */
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        used += __atomic_load_n(&u->occ_tid[i], __ATOMIC_RELAXED) != 0;
    const int n = __atomic_load_n(&u->nocc, __ATOMIC_RELAXED);
    return n > used ? n - used : 0;
}

/* The entry lock.  One word per entry, on the line every guarded call on
 * the tuner reads and writes anyway, so taking it uncontended costs no
 * line the call would not have moved.  It guards what the GIL guards in a
 * build that has one: the occupants (nocc, occ[], occ_tid[], overlaps), an
 * occupant's exception link (raced_tid, raced_name, race_seq, written by
 * another thread), serialize's FIFO (wq_head, wq_tail, waiters) and its
 * statistics (waits, wait_ns).  Not `owner`, `starving`, `slice_end` and the
 * evidence bytes (atomics of their own) nor `key` (claimed by CAS).
 *
 * Held for a few loads and stores only: never across Python code (a
 * thread spinning on it while attached would hold up a stop-the-world
 * pause, which waits for every attached thread), a wait, a park, a CUDA
 * call, an allocation or a report; never two entries' locks at once except
 * in address order (tg_tuner_wait_cycle's confirmation).  Not reentrant.
 * Contended, it spins briefly (TG_TUNER_LOCK_SPINS pauses: the holder is
 * a few stores from done), then parks on the word (futex), woken by the
 * unlock.  Async-signal-unsafe (a handler interrupting the holder would
 * spin forever).
 *
 * In a build with the GIL (tg_py.free_threaded 0) both calls do nothing:
 * every caller holds the GIL there, which already orders the fields above,
 * and the guarded fast path keeps its cost.  So a caller may take it only
 * where it holds the GIL in such a build. */
#define TG_TUNER_LOCK_SPINS 128

/* A lock word (0 free, 1 held, 2 held with a thread parked), the entry
 * lock's and the table's own (tuner_table.c: claims and the idle sweep; the
 * wait graph's).  These take it whatever the build; the contended paths are
 * in detectors/tuner_lock.c. */
void tg_word_lock_slow(uint32_t *word);
void tg_word_wake(uint32_t *word);

static inline void tg_word_lock(uint32_t *word)
{
    uint32_t free_word = 0;
    if (__builtin_expect(
            !__atomic_compare_exchange_n(word, &free_word, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED), 0))
        tg_word_lock_slow(word);
}

static inline void tg_word_unlock(uint32_t *word)
{
    if (__builtin_expect(__atomic_exchange_n(word, 0, __ATOMIC_RELEASE) == 2, 0))
        tg_word_wake(word);
}

/* Take u's entry lock. */
static inline void tg_tuner_entry_lock(struct tg_tuner *u)
{
    if (tg_py.free_threaded)
        tg_word_lock(&u->lock);
}

/* Give u's entry lock up (the caller holds it); wakes one parked thread. */
static inline void tg_tuner_entry_unlock(struct tg_tuner *u)
{
    if (tg_py.free_threaded)
        tg_word_unlock(&u->lock);
}
_Static_assert(offsetof(struct tg_tuner, overlaps) + sizeof(uint64_t) <= 64,
               "what every entry reads and writes is on the tuner's first line");

/* A low-severity overlap on u, counted on u (tg_tuner_overlaps): without
 * the GIL threads entering at once count it at once, so an atomic add (a
 * locked add on x86-64, no entry lock); with a GIL a plain one. */
static inline void tg_tuner_add_overlap(struct tg_tuner *u)
{
    if (tg_py.free_threaded)
        __atomic_fetch_add(&u->overlaps, 1, __ATOMIC_RELAXED);
    else
        __atomic_store_n(&u->overlaps, u->overlaps + 1, __ATOMIC_RELAXED);
}

enum tg_verdict {
    TG_NESTED,      /* this thread is already inside: depth, never a race */
    TG_FIRST,       /* nobody inside (serialize: this thread now holds the lock): enter */
    TG_RACE,        /* another thread is inside: report (detect) */
    TG_WAIT,        /* another thread holds the lock: wait (serialize) */
};

/* The lock (serialize mode).  One word per tuner, `owner`, as in a plain
 * mutex: a free tuner is taken by a compare-and-swap (no syscall, no wait:
 * what a tuned call costs when nobody else is in), and a waiting thread takes
 * it the same way right where it wakes, without the GIL, the way a
 * threading.Lock acquired by a blocked thread is taken before that thread
 * gets the GIL back.  So the thread that left and loops back, still holding
 * the GIL, finds the tuner taken and waits itself, instead of the woken
 * thread finding it taken again and going back to sleep through a GIL
 * round trip (the cost of the old condition-variable wait, which woke every
 * waiter on every leave).
 *
 * Waiters queue in a FIFO (linked through their thread records, under the
 * GIL) and park on their own word (core/park.h).  Unlock wakes the head
 * only.  Newcomers may take a free tuner ahead of the queue (no hand-off
 * per call) until a woken waiter that has waited TG_TUNER_STARVE_NS (10 ms:
 * Go's 1 ms made every tuned call of 8 threads a hand-off, a context switch
 * each) fails to take it: then the tuner is starving and unlock hands it to the head
 * directly (owner = its tid), so newcomers queue too, until a waiter that
 * waited less than that, or the last one, takes it (sync.Mutex's rule from
 * Go: a thread that calls a tuner in a loop does not keep another out).  A
 * hand-off needs no GIL either: the head owns the tuner before it runs.
 * A thread that proceeds unserialized (a broken cycle of waits) enters
 * without the lock and never unlocks it. */
#define TG_TUNER_STARVE_NS 10000000ull

/* Take u's lock for thread tid: 1 when it is free (now ours) or was handed
 * to tid.  Any thread, GIL or not. */
static inline int tg_tuner_try_lock(struct tg_tuner *u, uint32_t tid)
{
    uint32_t cur = __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE);
    if (cur == tid)
        return 1;
    return cur == 0 && __atomic_compare_exchange_n(&u->owner, &cur, tid, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Thread t gives u's lock up (it holds it; no-op otherwise).  Returns the
 * waiter to wake (the FIFO's head; tg_park_wake(&w->park)), handed the lock
 * when u is starving, or NULL.  GIL held in a build with one; takes u's
 * entry lock.  Without the GIL the head may take u, leave the FIFO and its
 * thread end before the caller wakes it (its record is TLS): wake it only
 * where its record is known to live. */
struct tg_thread *tg_tuner_unlock(struct tg_tuner *u, const struct tg_thread *t);

/* t joins / leaves u's FIFO of waiters (leave: from anywhere in it).  GIL
 * held in a build with one; each takes u's entry lock. */
void tg_tuner_wait_push(struct tg_tuner *u, struct tg_thread *t);
void tg_tuner_wait_remove(struct tg_tuner *u, struct tg_thread *t);

/* A woken waiter failed to take u after waiting waited_ns: starving when
 * that is long.  Without the GIL. */
static inline void tg_tuner_passed_over(struct tg_tuner *u, uint64_t waited_ns)
{
    if (waited_ns >= TG_TUNER_STARVE_NS)
        __atomic_store_n(&u->starving, 1, __ATOMIC_RELAXED);
}

/* A waiter took u after waiting waited_ns and leaves the FIFO (call before
 * tg_tuner_wait_remove): starving ends when it waited less than
 * TG_TUNER_STARVE_NS or it was the last.  GIL held. */
static inline void tg_tuner_served(struct tg_tuner *u, uint64_t waited_ns)
{
    if (waited_ns < TG_TUNER_STARVE_NS || __atomic_load_n(&u->waiters, __ATOMIC_RELAXED) <= 1)
        __atomic_store_n(&u->starving, 0, __ATOMIC_RELAXED);
}

/* Slices: another rule for who gets a lock when others wait, for serialize's
 * turn (guard/serialize_wait.c; the tuners keep the starvation rule above).  The
 * holder keeps the lock while others wait (it unlocks at the end of each
 * call and takes the lock back by CAS when it comes back first, as a thread
 * looping on a threading.Lock does; for the turn, a holder that comes back
 * at once wakes nobody inside its slice and the head sleeps until the
 * slice's end: "quiet slices" there), but only
 * until its slice ends; then its unlock hands the lock to the head.  A slice
 * starts when the holder is first waited for (tg_tuner_slice_start before
 * the first tg_tuner_wait_push) and when a waiter gets the lock (after it
 * left the FIFO); it lasts slice_ns, or fifo_ns / (waiters + 1) when that is
 * shorter, so that the waiters at the slice's start are served in about
 * fifo_ns.  Not a bound: a slice ends only at the holder's next unlock (a
 * long call overruns it), and one that started with fewer waiters keeps its
 * length; the caller bounds the wait itself (the turn's bypass).
 *
 * Why not the starvation rule there: with every thread calling in a loop,
 * each waiter of a FIFO of seven has waited 10 ms, so once one starves every
 * unlock is a hand-off until the FIFO has been through, a context switch and
 * a GIL hand-off per call (an H200 at 8 threads: 0.88x of a global lock); a
 * slice costs one hand-off per slice.  All under the GIL; `now` in ns. */
static inline void tg_tuner_slice_start(struct tg_tuner *u, uint64_t now, uint64_t slice_ns, uint64_t fifo_ns)
{
    uint64_t s = fifo_ns / (uint64_t)(__atomic_load_n(&u->waiters, __ATOMIC_RELAXED) + 1);
    /* atomic: the FIFO's head reads it while parked, without the GIL */
    __atomic_store_n(&u->slice_end, now + (s < slice_ns ? s : slice_ns), __ATOMIC_RELAXED);
    __atomic_store_n(&u->starving, 0, __ATOMIC_RELAXED);
}

/* Before holder t unlocks a sliced lock that others wait for: is its slice
 * over (then the unlock hands over)?  No-op unless t holds it. */
static inline void tg_tuner_slice_check(struct tg_tuner *u, const struct tg_thread *t, uint64_t now)
{
    if (__atomic_load_n(&u->owner, __ATOMIC_RELAXED) == (uint32_t)t->tid)
        __atomic_store_n(&u->starving,
                         __atomic_load_n(&u->wq_head, __ATOMIC_RELAXED) != NULL &&
                             now >= __atomic_load_n(&u->slice_end, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
}

/* Is t the head of u's FIFO now?  Any thread, GIL or not (a parked waiter
 * asks, to pick its time-out): the answer may be stale by the time it is
 * used, so it only ever chooses when to look again. */
static inline int tg_tuner_is_head(const struct tg_tuner *u, const struct tg_thread *t)
{
    return __atomic_load_n(&u->wq_head, __ATOMIC_RELAXED) == t;
}

/* Thread t's session now shows evidence `bit`: set it in t's slot of every
 * tuner t holds (t->held[], t->held_slot[]; a session nested deeper than
 * TG_MAX_HELD tuners marks the first TG_MAX_HELD).  Called by t only, when a
 * field of its evidence changes (a tuning method's first frame, a warmup, a
 * session's first synchronize or second launch): with the GIL, or from the
 * CUDA hooks without it, so the stores are relaxed atomics; t is inside
 * each of those tuners, so none is given back meanwhile. */
static inline void tg_tuner_mark_evidence(struct tg_thread *t, uint8_t bit)
{
    const int n = t->nheld < TG_MAX_HELD ? t->nheld : TG_MAX_HELD;
    for (int i = 0; i < n; i++) {
        struct tg_tuner *u = (struct tg_tuner *)t->held[i];
        const unsigned s = t->held_slot[i];
        if (s < TG_TUNER_MAX_OCC) {
            uint8_t cur = __atomic_load_n(&u->occ_ev[s], __ATOMIC_RELAXED);
            if (!(cur & bit))
                __atomic_store_n(&u->occ_ev[s], (uint8_t)(cur | bit), __ATOMIC_RELAXED);
        }
    }
}

/* Find the entry of `key`, creating it.  NULL when the table is full (the
 * caller then passes the call through unguarded and says so).  O(1) expected.
 * An entry nobody is inside or waiting for is idle: it keeps its key until
 * a claim finds the table three quarters full and gives the idle ones back.
 * So a pointer to it is valid only while someone is inside or waiting: after
 * anything that may let other threads run, get it again.  Without the GIL
 * other threads always run: between this call and the caller's enter or
 * wait_push, a sweep made by another thread's claim may give the entry
 * back if nobody else is inside it (a table three quarters full, and a
 * window of the few instructions between the two calls); nothing here
 * closes that window.  Any thread; lock-free unless it claims (the table
 * lock). */
struct tg_tuner *tg_tuner_get(uintptr_t key);

/* Is t inside u (an occupant, or an overflowed one by its own record)? */
int tg_tuner_is_inside(struct tg_tuner *u, const struct tg_thread *t);

/* The low-severity overlaps counted on the tuners since start or fork: the
 * entries in use and those given back.  GIL held (the exit summary). */
uint64_t tg_tuner_overlaps(void);

/* The entry of `key` if there is one (never creates).  GIL held. */
struct tg_tuner *tg_tuner_find(uintptr_t key);

/* The decision for thread t entering tuner u in `mode` (enum tg_mode).  In
 * serialize mode a call that is not nested tries u's lock: TG_FIRST holds
 * it, TG_WAIT did not get it. */
enum tg_verdict tg_tuner_decide(struct tg_tuner *u, const struct tg_thread *t, int mode);

/* Record t inside u (after TG_FIRST, TG_RACE or a finished wait), or one
 * level deeper (TG_NESTED).  Returns the occupant slot, or NULL on overflow;
 * a nested level of a thread without a slot returns NULL and must not be
 * left with tg_tuner_leave. */
struct tg_occupant *tg_tuner_enter(struct tg_tuner *u, struct tg_thread *t, void *tstate,
                                   const void *method, uint64_t now_ns, int nested);

/* t leaves one level.  Returns 1 when t's last level on u ended (its session
 * is over), 0 when it is still inside (nested).  The lock is not touched:
 * unlock first (tg_tuner_unlock), so a slot with waiters or an owner is
 * never given back.  The last one out leaves u idle (tg_tuner_get). */
int tg_tuner_leave(struct tg_tuner *u, struct tg_thread *t);
/* A call that got u and returned without entering it (its wait abandoned:
 * Ctrl-C, a kept exception): give u back if nobody is inside, waiting or
 * owning it, as the last leave would have.  GIL held. */
void tg_tuner_release_if_unused(struct tg_tuner *u);

/* The same, with t's slot as tg_tuner_enter returned it (NULL: looked up):
 * leaving from it reads no other occupant's slot. */
int tg_tuner_leave_at(struct tg_tuner *u, struct tg_thread *t, struct tg_occupant *mine);

/* serialize: a wait for u ended after wait_ns (u's counts for the exit
 * line).  Takes u's entry lock. */
void tg_tuner_count_wait(struct tg_tuner *u, uint64_t wait_ns);
/* The tid of an occupant of u other than t (t NULL: any), 0 if none: read
 * under the entry lock, for a caller that keeps the tid only. */
pid_t tg_tuner_other_tid(const struct tg_tuner *u, const struct tg_thread *t);

/* Another occupant than t (t NULL: any; the thread "already inside"),
 * copied into *dst under u's entry lock: dst, or NULL when there is none.
 * A copy, not the slot: without the GIL the slot may be left (cleared, or
 * taken by another thread) as soon as the lock is given up.  Its record
 * (thread) is valid while that thread lives; its link goes to the slot
 * through the session's tid and entry time (guard/guard_internal.h
 * tg__link_session). */
const struct tg_occupant *tg_tuner_other(const struct tg_tuner *u, const struct tg_thread *t,
                                         struct tg_occupant *dst);

/* Iterate over entries in use (for the summary): returns the next used
 * entry after *cursor (start with 0), or NULL. */
struct tg_tuner *tg_tuner_next(int *cursor);

/* serialize mode: would thread t waiting for u close a cycle of waits?
 * Records t's wait first (t->waiting_for = u, a release store), then
 * follows u's occupants to the tuners they wait for (thread->waiting_for),
 * all under the graph lock (detectors/wait_graph.c), so that of the threads
 * that close one cycle at once exactly one finds it; a cycle found is
 * confirmed with the locks of its entries held.  Returns the number of
 * tuners on the cycle (u first) written to path (at most 16), 0 if there is
 * none.  GIL held in a build with one; the caller holds no entry lock.  A
 * wait that ends clears t->waiting_for with a release store. */
int tg_tuner_wait_cycle(struct tg_tuner *u, struct tg_thread *t, struct tg_tuner **path, int max);
/* In a fork child: the graph lock's holder is not there. */
void tg_tuner_graph_atfork_child(void);

/* Threads that left a tuner without returning (pthread_exit, a thread
 * destroyed under Python) stay registered.  Remove every occupant of u whose
 * thread `alive` says is gone (the predicate makes the syscall; this stays
 * pure), free the lock when its owner is gone (*wake: the waiter to wake,
 * as tg_tuner_unlock says, else NULL), and copy the dead tids and idents
 * out.  Returns how many occupants were removed.  GIL held. */
int tg_tuner_reap(struct tg_tuner *u, int (*alive)(pid_t tid), pid_t *dead, unsigned long *dead_ident, int max,
                  struct tg_thread **wake);

/* After fork, in the child: nobody is inside anything, nobody waits. */
void tg_tuner_atfork_child(void);

#endif
