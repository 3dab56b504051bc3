/* serialize's waits, what every wait does (guard/serialize_wait_internal.h:
 * queueing, blocked stretches with the GIL released, interruption by a
 * signal handler, abandoning, the counts) and the wait for the process's
 * turn with its slices; a guarded call made by Python code run inside a
 * wait (a signal handler); the list of kernels that made a thread wait
 * (the summary).  The wait for a tuner's lock is
 * guard/serialize_tuner_wait.c; the guarded call that uses both is
 * guard/session.c; the locks themselves are detectors/tuner_table.h.
 *
 * Everything here runs with the GIL held, except the blocked stretches of
 * tg__park_until.  Allocates nothing; not signal-safe. */
#include "guard/serialize_wait.h"
#include "guard/serialize_wait_internal.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/options.h"
#include "core/park.h"
#include "core/py_attr.h"
#include "core/thread_state.h"
#include "core/thread_hold.h"
#include "reports/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct tg_guard_stats tg__gstats; /* guard/guard_internal.h; relaxed atomic adds (TG_GSTAT_ADD), any thread */

/* Kernels that made a thread wait (serialize), for the summary: the first
 * TG_MAX_CONTENDED distinct names; later ones are counted as "more".
 * Under contended_mu (taken after a wait only, no Python code under it). */
#define TG_MAX_CONTENDED 64
static char contended[TG_MAX_CONTENDED][128];
static int ncontended;
static pthread_mutex_t contended_mu = PTHREAD_MUTEX_INITIALIZER;

/* The kernel's name for the exit line's contended list; for a tuner without
 * one, method (g->method, "Tuner.run"), else its class's name (the list
 * under contended_mu, taken after the name is read).  GIL held;
 * reads Python attributes (a property, __getattr__: Python code), the
 * program's code inside t's wait (tg__program_code_begin). */
void tg__note_contended(struct tg_thread *t, PyObject *inst, const char *method)
{
    char k[sizeof contended[0]];
    tg__program_code_begin(t);
    tg_py_kernel_name(inst, k, sizeof k);
    if (strcmp(k, "?") == 0 && method && method[0] && strcmp(method, "?") != 0) {
        snprintf(k, sizeof k, "%s", method);
    } else if (strcmp(k, "?") == 0) {
        PyObject *type = tg_py.PyObject_Type(inst);
        tg_py_attr_str(type, "__qualname__", k, sizeof k);
        if (type)
            tg_py.Py_DecRef(type);
        tg_py_drop_error();
    }
    tg__program_code_end(t);
    if (!k[0])
        return; /* no name at all: not listed */
    pthread_mutex_lock(&contended_mu); /* a few compares and a copy: never blocks long */
    int i = 0;
    while (i < ncontended && strcmp(contended[i], k) != 0)
        i++;
    if (i == ncontended && ncontended < TG_MAX_CONTENDED)
        snprintf(contended[ncontended++], sizeof contended[0], "%s", k);
    pthread_mutex_unlock(&contended_mu);
}

static void turn_slice_start(uint64_t now);

/* Back into lk's FIFO, at its tail, where a guarded call made inside t's
 * wait took t out (tg__wait_away_begin): before the wait blocks again.
 * GIL held. */
static void fifo_rejoin(struct tg_tuner *lk, struct tg_thread *t)
{
    if (__builtin_expect(!tg__gthread(t)->wait_left, 1))
        return;
    if (lk == &tg__turn && lk->waiters == 0)
        turn_slice_start(tg_mono_ns()); /* the holder is waited for from now on, as at the first wait */
    tg_tuner_wait_push(lk, t);
    tg__gthread(t)->wait_left = 0;
}

/* A waiter leaves u's FIFO without entering (a signal's exception): if the
 * lock was handed to it meanwhile, pass it on; if it was the one woken for a
 * free tuner, wake the next, so no wake-up is lost with it.  GIL held. */
void tg__abandon_wait(struct tg_tuner *u, struct tg_thread *t)
{
    const int was_head = u->wq_head == t;
    tg__fifo_leave(u, t);
    t->waiting_for = NULL;
    if (__atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) == (uint32_t)t->tid)
        tg__unlock_tuner(u, t);
    else if (__atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) == 0 && u->wq_head)
        tg_park_wake(&u->wq_head->park);
    else if (u == &tg__turn && was_head && u->wq_head)
        tg_park_wake(&u->wq_head->park); /* the new head: to pick its time-out as the head (tg__park_until) */
}

/* A wait of t's that began at t0 ends (held, proceeded, abandoned): its
 * time goes to the exit line's total (and u's, for a tuner), measured to
 * this real end, and the call to its count of serialized calls, unless a
 * wait of the same call (for the turn) counted it.  The exit line's counts
 * are relaxed atomic adds; u's, the fields of u's FIFO, are kept as its
 * FIFO is. */
void tg__wait_done(struct tg_tuner *u, struct tg_thread *t, uint64_t t0)
{
    const uint64_t dt = tg_mono_ns() - t0;
    TG_GSTAT_ADD(waiting, -1);
    TG_GSTAT_ADD(waiting_t0_sum, -t0);
    if (!tg__gthread(t)->wait_call_counted) {
        TG_GSTAT_ADD(waits, 1);
        TG_GSTAT_ADD(waiting_calls, -1);
    }
    TG_GSTAT_ADD(wait_ns, dt);
    if (u) {
        u->waits++;
        u->wait_ns += dt;
    }
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_end(t);
}

/* One blocked stretch of a wait for lock lk (a tuner's, or the turn): the
 * GIL released, parked on t's own word, taking lk right where it wakes
 * (before it asks for the GIL back), until deadline (ns).  Returns 1 with lk
 * held, else 0 after a signal (*rc EINTR) or at deadline (*rc ETIMEDOUT),
 * for the caller's checks with the GIL.  GIL held on entry and exit.
 *
 * A tuner's lock (sliced 0): a woken waiter that finds it taken counts for
 * the starvation rule (t0: when the wait began).  The turn (sliced 1), in
 * its quiet slices: a quiet holder wakes nobody inside its slice
 * (tg__release_turn), so the time-out is chosen at each wake-up.  The
 * FIFO's head sleeps until the holder's slice ends, and then finds the turn
 * free if the holder gave it up for good (the head waited at most a slice
 * for nothing, two when that release raced its wake-up), or the holder's
 * next release hands it over and wakes it;
 * everyone else sleeps until deadline, and a thread that leaves the FIFO as
 * its head wakes the new head, so that it picks the slice's end. */
int tg__park_until(struct tg_tuner *lk, struct tg_thread *t, uint64_t deadline, uint64_t t0, int sliced,
                      int *rc)
{
    const uint32_t tid = (uint32_t)t->tid;
    uint32_t seen = __atomic_load_n(&t->park, __ATOMIC_ACQUIRE);
    *rc = 0;
    fifo_rejoin(lk, t);
    if (tg_tuner_try_lock(lk, tid))
        return 1;
    int got = 0;
    PyThreadState *ts = tg_py.PyEval_SaveThread();
    tg_hold_wait_begin(t); /* a parking point (core/thread_hold.h) */
    for (;;) {
        uint64_t now = tg_mono_ns();
        if (now >= deadline) {
            *rc = ETIMEDOUT;
            break;
        }
        uint64_t until = deadline;
        if (sliced && tg_tuner_is_head(lk, t)) {
            /* The head: a look at the turn every TG_TURN_LOOK_NS, and one at
             * the slice's end if that comes sooner.  A quiet holder's
             * releases wake nobody, so these looks are how the head finds a
             * holder that stopped calling (the turn free inside the slice),
             * and how it finds a quiet holder's last release that landed
             * just after the head's wake at the slice's end found the turn
             * taken (decided on a clock read before the unlock: it woke
             * nobody); before, the head then slept until its deadline, the
             * bypass bound.  Behind a long call this is one futex time-out
             * and one CAS per look, without the GIL. */
            uint64_t end = __atomic_load_n(&lk->slice_end, __ATOMIC_RELAXED);
            uint64_t next = now + TG_TURN_LOOK_NS;
            if (end > now && end < next)
                next = end;
            if (next < until)
                until = next;
        }
        int r = tg_park_wait(&t->park, seen, until - now);
        seen = __atomic_load_n(&t->park, __ATOMIC_ACQUIRE);
        if (tg_tuner_try_lock(lk, tid)) {
            got = 1;
            break;
        }
        if (r == EINTR) {
            *rc = EINTR; /* its handler ran: the caller's checks need the GIL */
            break;
        }
        if (r == 0 && !sliced) /* woken, but a thread that did not wait took it first */
            tg_tuner_passed_over(lk, tg_mono_ns() - t0);
    }
    tg_hold_wait_end(t);
    tg_py.PyEval_RestoreThread(ts);
    return got;
}

/* Did a signal handler raise (Ctrl-C)?  Either in our own Python code since
 * the wait began (the audit hook, a name look-up, a report: the exception
 * kept on t, core/py_attr.h), or, after a stretch of tg__park_until without the
 * lock (rc), when the handlers run here.  Then the wait for lk is abandoned
 * (nothing held; the exception set, or kept for tg__guard_entry) and this
 * returns 1.  Handlers run in the main thread only, which checks after every
 * stretch (a signal delivered to another thread does not interrupt its
 * wait), and the time waited until now counted (tg__wait_done).  GIL held. */
int tg__wait_interrupted(struct tg_tuner *lk, struct tg_thread *t, int rc, int main_thread, uint64_t t0)
{
    int raised = t->kept_exc[0] != NULL;
    if (!raised && (rc == EINTR || main_thread)) {
        /* The handlers run here, t still in lk's FIFO (busy: tunerguard's
         * hooks pass through).  A guarded call from one is the program's
         * call: it takes t out of the FIFO and is guarded as any other
         * (tg__wait_away_begin), so it waits for its tuner's holder. */
        tg__program_code_begin(t);
        raised = tg_py.PyErr_CheckSignals() < 0;
        tg__program_code_end(t);
    }
    if (!raised)
        return 0;
    tg__abandon_wait(lk, t);
    tg__wait_done(lk == &tg__turn ? NULL : lk, t, t0);
    return 1;
}

/* ---- the turn -----------------------------------------------------------------
 *
 * serialize's lock per tuner is what correctness needs; speed needs more.
 * Triton's launcher lets the GIL go around every launch, so N threads that
 * call tuned kernels in a loop hand the GIL around at every launch: that is
 * why a plain global lock around Autotuner.run (seeds/001) runs faster than
 * no lock at all (the threads blocked on it leave the GIL to the one
 * inside).  A lock per tuner keeps one thread per tuner runnable, and those
 * still fight over the GIL and hand each other their tuners (measured on an
 * H200, 2 kernels: 0.34-0.51x of no tunerguard at 2-8 threads).
 *
 * So the outermost guarded call of a thread first takes the process's turn,
 * a lock of the same kind as a tuner's (struct tg_tuner tg__turn: CAS, FIFO,
 * wake-one; handed on in slices, below), then the tuner's own.  A thread
 * that holds the turn calls tuners inside tuners freely (its nested sessions
 * take only their tuners' locks).  The turn is only a preference: a thread
 * that has waited TG_TURN_BYPASS_NS for it goes on without it, to its tuner's
 * lock alone, so the turn never makes a thread wait for another tuner than
 * the one it calls for longer than that (a holder benchmarking for seconds
 * on a cold kernel does not hold up the tuning of other kernels; a holder
 * waiting inside its tuner for another thread's work is not deadlocked by
 * that thread's tuner call), and a holder that died is found then too.
 * Without a GIL (a free-threaded build with the GIL off: guard/gil_state.h)
 * there is nothing to hand around and the turn would run the program's tuned
 * calls one at a time: the calls take their tuners' locks only. */
struct tg_tuner tg__turn;

/* Who gets the turn when others wait: slices (detectors/tuner_table.h,
 * "Slices") of TG_TURN_SLICE_NS, CPython's own switch interval, shorter with
 * many waiters so that the FIFO is served within half the bypass bound.
 * The head looks at the turn every TG_TURN_LOOK_NS (at most 5 ms) whatever
 * the slice, so that a longer slice (fewer hand-offs, each a thread switch
 * onto a core idle for the slice: docs/benchmarks.md) would
 * not lengthen what a holder that stops calling can leave unused.
 *
 * Quiet slices: a holder that comes back for the turn within
 * TG_TURN_QUIET_GAP_NS of giving it up (threads calling tuned kernels back
 * to back) wakes nobody when it gives it up inside its slice.  Waking the
 * head at every release costs a futex syscall per tuned call and, when the
 * woken head takes the turn while the holder is a few microseconds from its
 * next call, a GIL hand-off: measured, 12-18 % of serialize against the
 * build that woke every time (CPU model, 4 and 8 threads).  The head then
 * sleeps until the slice's end instead, looking every TG_TURN_LOOK_NS
 * (tg__park_until).  A holder that stays
 * away longer (other work between its tuned calls) wakes the head at each
 * release as before, so the head runs its tuned calls in the holder's
 * gaps: quiet slices alone, for everyone, cost a mixed workload 21-26 % (CPU
 * model, 4 threads, 200 us of other work a step).  A holder is quiet when
 * its last TG_TURN_QUIET_AFTER returns all came within the gap, learnt at
 * each return (tg__try_turn: one clock read after a contended release), so
 * a loop with one long gap a step is never quiet; a wrong guess costs the
 * head at most a look, TG_TURN_LOOK_NS. */

static void turn_slice_start(uint64_t now)
{
    tg_tuner_slice_start(&tg__turn, now, TG_TURN_SLICE_NS, TG_TURN_BYPASS_NS / 2);
}

/* Block for the turn, at most TG_TURN_BYPASS_NS.  GIL held on entry and
 * exit, released while blocked.  Returns 1 with the turn, 0 without it (gone
 * on without), -1 when a signal handler raised (the wait abandoned, nothing
 * held).  inst: the tuner the call is for (the summary's contended list, the
 * trace). */
int tg__wait_for_turn(struct tg_thread *t, PyObject *inst, const char *method)
{
    uint64_t t0 = tg_mono_ns();
    if (tg__turn.waiters == 0)
        turn_slice_start(t0); /* the holder is waited for from now on */
    tg__fifo_join(&tg__turn, t);
    tg__wait_begin(t, t0);
    pid_t holder_tid = (pid_t)__atomic_load_n(&tg__turn.owner, __ATOMIC_RELAXED);
    tg__program_code_begin(t); /* as in tg__wait_for_tuner */
    tg_py.PySys_Audit("tunerguard.serialize_wait", "(k)", (unsigned long)holder_tid);
    tg__program_code_end(t);
    tg_py_drop_error();
    struct tg_tuner *u = tg_tuner_find((uintptr_t)inst); /* Python code ran: look it up again */
    if (u && !u->noted) {
        u->noted = 1;
        tg__note_contended(t, inst, method);
    }
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_begin(t, holder_tid, (uintptr_t)inst);
    if (tg__wait_interrupted(&tg__turn, t, 0, 0, t0)) /* as in tg__wait_for_tuner */
        return -1;
    const int main_thread = t->is_main;
    int got = 0, rc;
    for (;;) {
        uint64_t now = tg_mono_ns();
        if (now - t0 >= TG_TURN_BYPASS_NS) {
            got = tg_tuner_try_lock(&tg__turn, (uint32_t)t->tid); /* a last try, then on without it */
            break;
        }
        uint64_t slice = t0 + TG_TURN_BYPASS_NS - now;
        if (main_thread && slice > 50000000ull)
            slice = 50000000ull; /* signal handlers run in the main thread */
        if ((got = tg__park_until(&tg__turn, t, now + slice, t0, 1, &rc)))
            break;
        if (tg__wait_interrupted(&tg__turn, t, rc, main_thread, t0))
            return -1;
    }
    uint64_t dt = tg_mono_ns() - t0;
    const int was_head = tg__turn.wq_head == t;
    tg__fifo_leave(&tg__turn, t);
    if (got) {
        turn_slice_start(t0 + dt); /* this thread's slice */
        tg__gthread(t)->turn_released_ns = 0; /* a gap that ended in a wait says nothing of how soon t comes back */
    }
    /* The new head (this one got the turn, or went on without it as the
     * head): woken to pick its time-out again, the end of the slice running
     * now, since a quiet holder's releases wake nobody (tg__park_until). */
    if ((got || was_head) && tg__turn.wq_head)
        tg_park_wake(&tg__turn.wq_head->park);
    if (!got) {
        /* A holder that died keeps the turn: free it for the others. */
        pid_t dead[1];
        unsigned long ident[1];
        struct tg_thread *w;
        tg_tuner_reap(&tg__turn, tg_tid_alive, dead, ident, 1, &w);
        if (w)
            tg_park_wake(&w->park);
    }
    tg__wait_done(NULL, t, t0);
    return got;
}

/* ---- a call made inside a wait ---------------------------------------------------
 *
 * Python code runs on a waiting thread: the signal handlers run between the
 * main thread's stretches (tg__wait_interrupted), the audit hooks on the wait's
 * event, a property read for the kernel's name.  The thread is busy there
 * (tunerguard's own hooks pass through) and in the FIFO of the lock it
 * waits for.  A guarded call from that code (a SIGALRM handler calling the
 * kernel) is the program's, made by a thread that has not entered the
 * tuner it waits for: passed through as tunerguard's own calls are, it
 * would go in past the holder, unguarded, and trample the holder's call
 * (the TypeError of Triton 3.6's Autotuner, no race counted).  So it is
 * guarded as any call of the thread: it waits for its tuner's holder, and
 * for the turn unless t holds it; a call on a tuner t is inside already (a
 * handler interrupting a nested call's wait) is a nested level, depth on
 * t, never a race.
 *
 * Its waits need t in no other FIFO (one link per thread), and the lock of
 * the interrupted wait must not be handed to t while t waits for another
 * (or for the same one as a second caller: the handler's wait would never
 * get the turn its own interrupted wait holds the place for).  So t leaves
 * that FIFO first, as an abandoned wait does (a lock handed to it meanwhile
 * goes on to the next), and goes back in at the tail when the interrupted
 * wait parks again (fifo_rejoin): the handler's call, which the program
 * made later, goes first. */

void tg__wait_away_begin(struct tg_thread *t, struct tg_wait_away *w)
{
    w->lk = tg__gthread(t)->wait_lock;
    w->waiting_for = t->waiting_for;
    w->busy = t->busy;
    w->open = tg__gthread(t)->wait_open;
    w->counted = tg__gthread(t)->wait_call_counted;
    w->had_turn = t->nheld == 0 && w->lk != &tg__turn &&
                  __atomic_load_n(&tg__turn.owner, __ATOMIC_RELAXED) == (uint32_t)t->tid;
    if (w->lk && !tg__gthread(t)->wait_left)
        tg__abandon_wait(w->lk, t);
    tg__gthread(t)->wait_lock = NULL;
    t->waiting_for = NULL;
    t->busy = 0;
    tg__gthread(t)->wait_open = 0;
    tg__gthread(t)->wait_call_counted = 0;
}

void tg__wait_away_end(struct tg_thread *t, const struct tg_wait_away *w)
{
    tg__gthread(t)->wait_lock = w->lk;
    tg__gthread(t)->wait_left = 1;
    t->waiting_for = w->waiting_for;
    t->busy = w->busy;
    tg__gthread(t)->wait_open = w->open;
    tg__gthread(t)->wait_call_counted = w->counted;
    /* The turn the interrupted wait held (it waits for its tuner): the
     * call's session gave it up as an outermost one does; taken back if
     * nobody has it (it is a preference, not what keeps a tuner's
     * callers apart). */
    if (w->had_turn && t->nheld == 0)
        tg__try_turn(t);
}

void tg_guard_contended(char *buf, int len)
{
    enum { SHOWN = 3 }; /* the exit line names a few; the reports name each */
    int used = 0, i = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&contended_mu);
    for (; i < ncontended && i < SHOWN; i++) {
        int n = snprintf(buf + used, (size_t)(len - used), "%s%s", i ? ", " : "", contended[i]);
        if (n < 0 || n >= len - used - 24) { /* whole names only, room left for the count */
            buf[used] = '\0';
            break;
        }
        used += n;
    }
    if (i < ncontended)
        snprintf(buf + used, (size_t)(len - used), "%s%s%d more", i ? " and " : "",
                 ncontended == TG_MAX_CONTENDED ? "at least " : "", ncontended - i);
    pthread_mutex_unlock(&contended_mu);
}

void tg__serialize_atfork_child(void)
{
    pthread_mutex_init(&contended_mu, NULL); /* a parent's thread may have held it at the fork */
    ncontended = 0;
    memset(&tg__turn, 0, sizeof tg__turn); /* its holder and waiters are the parent's */
    tg__alive_atfork_child();
}

