/* The guard's part of the per-thread record: the fields only guard/ reads
 * and writes (the guarded call, detect's unregistered session, serialize's
 * waits and turn, the sessions without a slot).  It lives in the record's
 * guard area (core/thread_state.h, TG_GUARD_THREAD_SIZE bytes at the
 * record's tail, 64-byte aligned), so that another thread reaches it from
 * the record a tuner table entry or the registry of unregistered sessions
 * points at, as it reaches the rest of the record.
 *
 * Contract: the same as the record's.  tg__gthread() is an address
 * computation: no call, no lock, async-signal-safe.  Each field says who
 * writes and reads it; "GIL held" unless it says otherwise. */
#ifndef TG_GUARD_THREAD_H
#define TG_GUARD_THREAD_H

#include "core/thread_state.h"

#include <stdint.h>
#include <sys/types.h>

struct tg_guard_thread {
    /* Its first line: what a guarded call in detect's steady state reads
     * and writes of its own thread's here (guard/session.c). */
    /* fork() children this thread's copy has gone on in (the fork-child
     * handler counts it: tg__gthread_atfork_child).  A guarded frame notes
     * it at entry: one that sees it changed at exit was entered in the
     * parent, and its holds went with the tables reset at fork, so it gives
     * nothing back (guard/session.c). */
    unsigned forks;
    /* The replacement check's draw (xorshift32 state, 0 until the first;
     * guard/guard_internal.h, tg__guard_check_replaced). */
    uint32_t replace_rng;
    /* Its slot in the registry of unregistered sessions + 1; 0 none yet, -1
     * full (guard/lazy_session.c). */
    int lazy_slot;
    /* >0 while serialize's wait runs the program's Python code (its audit
     * hooks, its signal handlers), where a guarded call is the program's
     * call and is guarded as one (guard/serialize_wait.c).  Own thread. */
    int wait_open;
    /* Inside the program's own wrapper of a guarded method (a replacement
     * that chains to the original), entered while another thread was inside
     * that instance: the instance, and the wrapper's guard.  Own thread. */
    uintptr_t wrapped_busy;
    const void *wrapped_by;
    /* detect's unregistered session (its instance is the record's
     * lazy_inst, which the CUDA hooks read): its guard, its thread state
     * (for its Python stack in a report) and its entry (tg_ticks).  Written
     * by the owner, read by a thread that registers the session for it
     * (guard/lazy_session.c). */
    const void *lazy_g;
    void *lazy_tstate;
    uint64_t lazy_t0;
    /* While a report of the race seen at a declared tuner's tuning step is
     * made (guard/race_decide.c, tg__check_race_at_step): that step's
     * guard; NULL otherwise.  Own thread. */
    const void *step_entry;

    /* serialize: the lock (the turn, or a tuner's entry) this thread waits
     * for, NULL when it waits for none; and whether it is out of that lock's
     * FIFO for now: a guarded call made by Python code run inside the wait
     * (a signal handler run between its stretches, an audit hook) took it
     * out to wait as a call of its own, and the wait goes back in at the
     * FIFO's tail (guard/serialize_wait.c).  Own thread. */
    void *wait_lock;
    int wait_left;
    /* serialize: the call whose wait for a tuner begins has waited for the
     * turn already, and was counted then (guard/serialize_wait.c).  Own
     * thread. */
    int wait_call_counted;
    /* serialize's turn (guard/serialize_wait.h, tg__release_turn): when this
     * thread last gave the turn up while others waited (ns; 0: it did not,
     * or it has been back since), and how many times in a row it came back
     * for it soon after (quiet from TG_TURN_QUIET_AFTER on: its releases
     * need not wake the FIFO's head).  Own thread. */
    uint64_t turn_released_ns;
    int turn_short;
    /* A session without an occupant slot (more threads inside one tuner
     * than it has slots): its race link for the exception report, as an
     * occupant's raced_* fields (made at its entry, or by another thread's
     * race: guard/slotless.c, guard/race_decide.c), and the instance (0:
     * none).  Reset in a fork child: a parent's race names no thread of
     * the child. */
    pid_t ovf_raced_tid;
    uint64_t ovf_race_seq;
    uintptr_t ovf_inst;
    char ovf_raced_name[48];
#ifdef TG_INSITU
    uint64_t insitu_orig; /* the profile build: the last original's cycles (guard/session.c) */
#endif
};

_Static_assert(sizeof(struct tg_guard_thread) <= TG_GUARD_THREAD_SIZE,
               "the guard's part fits the record's guard area (core/thread_state.h)");
_Static_assert(_Alignof(struct tg_guard_thread) <= 64, "the guard area is 64-byte aligned");
_Static_assert(offsetof(struct tg_guard_thread, step_entry) + sizeof(void *) <= 64,
               "a guarded call's fields share the guard area's first line");

/* The guard's part of record t (t's guard area); const for a const t. */
static inline __attribute__((always_inline)) struct tg_guard_thread *tg__gthread_of(struct tg_thread *t)
{
    return (struct tg_guard_thread *)(void *)t->guard_area;
}
static inline __attribute__((always_inline)) const struct tg_guard_thread *
tg__gthread_of_c(const struct tg_thread *t)
{
    return (const struct tg_guard_thread *)(const void *)t->guard_area;
}
#define tg__gthread(t)                                                                                         \
    _Generic((t), const struct tg_thread *: tg__gthread_of_c, default: tg__gthread_of)(t)

/* fork child (guard/lifecycle.c, after tg__thread_atfork_child): the
 * calling thread's frames from before the fork see `forks` changed; a
 * session without a slot in the parent is none of the child's. */
static inline void tg__gthread_atfork_child(void)
{
    struct tg_guard_thread *gt = tg__gthread(tg__self_busy());
    gt->ovf_raced_tid = 0;
    gt->ovf_inst = 0;
    gt->forks++;
}

#endif
