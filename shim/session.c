/* The session policy of a guarded call.  A call:
 *
 *     guard(self, *args, **kw)         (a trampoline, shim/guard_install.c)
 *         enter(self, this thread)     -- nested / first / race / wait
 *         original(self, *args, **kw)
 *         leave(self, this thread)
 *
 * The verdict is the tuner table's (detectors/tuner_table.h); the reports
 * the call may give are filled in shim/report_capture.c.  Here: the guarded
 * call itself (a hot path), the serialize wait, the release of holds of
 * threads that died inside, and the counts of the exit summary.
 *
 * Everything here runs with the GIL held, except the serialize wait, which
 * releases it while it blocks. */
#include "shim/guard_internal.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/park.h"
#include "core/options.h"
#include "core/py_attr.h"
#include "core/thread_state.h"
#include "reports/trace.h"
#include "shim/cuda_hooks.h"
#include "shim/cuda_stress.h"
#include "shim/py_arm.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct tg_guard_stats tg__gstats;

/* Kernels that made a thread wait (serialize), for the summary. */
#define TG_MAX_CONTENDED 16
static char contended[TG_MAX_CONTENDED][64];
static int ncontended;

/* ---- calling the original ------------------------------------------------ */

static inline PyObject *call_orig(struct tg_guard *g, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *orig = g->orig;
    if (tg_py.PyObject_Vectorcall) /* 3.11+ */
        return tg_py.PyObject_Vectorcall(orig, args, (size_t)nargs, kwnames);
    if (g->orig_is_function && tg_py._PyFunction_Vectorcall)
        return tg_py._PyFunction_Vectorcall(orig, args, (size_t)nargs, kwnames);
    /* 3.9/3.10: PyObject_Vectorcall is an inline there; this exported
     * helper takes the same vector and kwnames. */
    return tg_py._PyObject_MakeTpCall(tg_py.PyThreadState_Get(), orig, args, nargs, kwnames);
}

static void note_contended(PyObject *inst)
{
    char k[64];
    tg_py_kernel_name(inst, k, sizeof k);
    for (int i = 0; i < ncontended; i++)
        if (strcmp(contended[i], k) == 0)
            return;
    if (ncontended < TG_MAX_CONTENDED)
        snprintf(contended[ncontended++], sizeof contended[0], "%s", k);
}

/* The tuner table is full (tg_tuner_get gave NULL): the call runs unguarded;
 * said once.  GIL held. */
__attribute__((cold, noinline)) static void table_full(void)
{
    static int warned;
    if (!warned) {
        warned = 1;
        tg__warn("more than %d tuners in use at once; the calls of the others run unguarded", TG_TUNER_SLOTS);
    }
}

/* Liveness of other threads, cached: tid -> when tgkill last said alive.
 * GIL held.  A thread that dies inside is found at most 100 ms after its
 * last check (and every waiter re-checks, uncached, once a second). */
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

/* Release the holds (occupancy, the lock) of threads that died inside u, and
 * report each.  Returns how many holds were released.  GIL held. */
static int reap_dead(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                     int (*alive)(pid_t))
{
    pid_t dead[TG_TUNER_MAX_OCC];
    unsigned long ident[TG_TUNER_MAX_OCC];
    uint32_t owner = __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE);
    struct tg_thread *w;
    int n = tg_tuner_reap(u, alive, dead, ident, TG_TUNER_MAX_OCC, &w);
    int freed = owner != 0 && __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) != owner;
    if (w && w != t)
        tg_park_wake(&w->park);
    if (n > 0)
        tg__report_holders_died(t, inst, g, dead, ident, n < TG_TUNER_MAX_OCC ? n : TG_TUNER_MAX_OCC);
    return n + freed;
}

/* Give u's lock up if t holds it, waking the next waiter (the FIFO's head).
 * GIL held. */
static inline void unlock_tuner(struct tg_tuner *u, struct tg_thread *t)
{
    struct tg_thread *w = tg_tuner_unlock(u, t);
    if (__builtin_expect(w != NULL, 0))
        tg_park_wake(&w->park);
}

/* A waiter leaves u's FIFO without entering (a signal's exception): if the
 * lock was handed to it meanwhile, pass it on; if it was the one woken for a
 * free tuner, wake the next, so no wake-up is lost with it.  GIL held. */
static void abandon_wait(struct tg_tuner *u, struct tg_thread *t)
{
    tg_tuner_wait_remove(u, t);
    t->waiting_for = NULL;
    if (__atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) == (uint32_t)t->tid)
        unlock_tuner(u, t);
    else if (__atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) == 0 && u->wq_head)
        tg_park_wake(&u->wq_head->park);
}

/* One blocked stretch of a wait for lock lk (a tuner's, or the turn): the
 * GIL released, parked on t's own word, taking lk right where it wakes
 * (before it asks for the GIL back).  Returns 1 with lk held, else 0 after a
 * signal (*rc EINTR) or slice_ns (*rc ETIMEDOUT), for the caller's checks
 * with the GIL.  t0: when the wait began, for a tuner's starvation rule (the
 * turn has its own, its slices: starve 0).  GIL held on entry and exit. */
static int park_for(struct tg_tuner *lk, struct tg_thread *t, uint64_t slice_ns, uint64_t t0, int starve, int *rc)
{
    const uint32_t tid = (uint32_t)t->tid;
    uint32_t seen = __atomic_load_n(&t->park, __ATOMIC_ACQUIRE);
    *rc = 0;
    if (tg_tuner_try_lock(lk, tid))
        return 1;
    int got = 0;
    PyThreadState *ts = tg_py.PyEval_SaveThread();
    for (;;) {
        *rc = tg_park_wait(&t->park, seen, slice_ns);
        seen = __atomic_load_n(&t->park, __ATOMIC_ACQUIRE);
        if (tg_tuner_try_lock(lk, tid)) {
            got = 1;
            break;
        }
        if (*rc != 0)
            break; /* a signal or a time-out: the caller's checks need the GIL */
        /* woken, but a thread that did not wait took it first */
        if (starve)
            tg_tuner_passed_over(lk, tg_mono_ns() - t0);
    }
    tg_py.PyEval_RestoreThread(ts);
    return got;
}

/* After a stretch of park_for without the lock: did a signal handler raise
 * (Ctrl-C)?  Then the wait for lk is abandoned (nothing held, the exception
 * set) and this returns 1.  Handlers run in the main thread only, which
 * checks after every stretch (a signal delivered to another thread does not
 * interrupt its wait).  GIL held. */
static int wait_interrupted(struct tg_tuner *lk, struct tg_thread *t, int rc, int main_thread)
{
    if (!((rc == EINTR || main_thread) && tg_py.PyErr_CheckSignals() < 0))
        return 0;
    abandon_wait(lk, t);
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_end(t);
    return 1;
}

/* Serialize: block until t holds u's lock (detectors/tuner_table.h, "The
 * lock").  GIL held on entry and exit, released while blocked.  Returns 1
 * when t holds the lock, 0 when a cycle of waits was found and the policy
 * lets t proceed unserialized, -1 when a signal handler raised (Ctrl-C:
 * KeyboardInterrupt is set; the wait was abandoned, nothing held).
 *
 * Blocked, the thread parks on its own word and, when woken, takes the lock
 * right there, before it asks for the GIL back (as a threading.Lock
 * does).  It wakes by itself every second to release the holds of threads
 * that died inside and to report a wait longer than wait_timeout; the main
 * thread every 50 ms as well, to run Python's signal handlers (a signal
 * delivered to another thread does not interrupt its wait), so Ctrl-C ends
 * the wait within that. */
static int wait_for_tuner(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g)
{
    const uint32_t tid = (uint32_t)t->tid;
    /* In the FIFO, u stays this instance's entry while Python code runs below
     * (reports, audit hooks), which lets other threads leave and enter. */
    tg_tuner_wait_push(u, t);
    t->waiting_for = u;
    uint64_t t0 = tg_mono_ns();
    struct tg_tuner *path[16];
    int n = tg_tuner_wait_cycle(u, t, path, 16);
    if (n > 0 && tg__report_deadlock(u, t, inst, g, path, n) && !tg_tuner_try_lock(u, tid)) {
        abandon_wait(u, t);
        return 0;
    }
    const struct tg_occupant *holder = tg_tuner_other(u, t);
    pid_t holder_tid = holder ? holder->tid : (pid_t)__atomic_load_n(&u->owner, __ATOMIC_RELAXED);
    holder = NULL; /* the audit hooks below are Python code: other threads may run */
    /* Tell observers (the reproducers' barriers) that this thread is about to
     * block in tunerguard rather than run.  Only on contention. */
    tg_py.PySys_Audit("tunerguard.serialize_wait", "(k)", (unsigned long)holder_tid);
    tg_py.PyErr_Clear();
    if (!u->noted) { /* once per tuner: it reads Python attributes */
        u->noted = 1;
        note_contended(inst);
    }
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_begin(t, holder_tid, (uintptr_t)inst);
    const int main_thread = t->tid == getpid(); /* signal handlers run there */
    const uint64_t slice = main_thread ? 50000000ull : 1000000000ull;
    const uint64_t deadline = t0 + (uint64_t)tg_opts.wait_timeout * 1000000000ull;
    uint64_t last_reap = t0;
    int timed_out = 0, rc;
    while (!park_for(u, t, slice, t0, 1, &rc)) {
        if (wait_interrupted(u, t, rc, main_thread))
            return -1;
        uint64_t now = tg_mono_ns();
        if (now - last_reap >= 1000000000ull) {
            last_reap = now;
            reap_dead(u, t, inst, g, tg_tid_alive);
            if (!timed_out && now >= deadline) {
                timed_out = 1; /* once per wait; the wait goes on */
                tg__report_wait_timeout(u, t, inst, g, now - t0);
            }
        }
    }
    uint64_t dt = tg_mono_ns() - t0;
    tg_tuner_served(u, dt);
    tg_tuner_wait_remove(u, t);
    t->waiting_for = NULL;
    tg__gstats.waits++;
    tg__gstats.wait_ns += dt;
    u->waits++;
    u->wait_ns += dt;
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_end(t);
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
 * a lock of the same kind as a tuner's (a static struct tg_tuner: CAS, FIFO,
 * wake-one; handed on in slices, below), then the tuner's own.  A thread
 * that holds the turn calls tuners inside tuners freely (its nested sessions
 * take only their tuners' locks).  The turn is only a preference: a thread
 * that has waited TG_TURN_BYPASS_NS for it goes on without it, to its tuner's
 * lock alone, so the turn never makes a thread wait for another tuner than
 * the one it calls for longer than that (a holder benchmarking for seconds
 * on a cold kernel does not hold up the tuning of other kernels; a holder
 * waiting inside its tuner for another thread's work is not deadlocked by
 * that thread's tuner call), and a holder that died is found then too. */
#define TG_TURN_BYPASS_NS 100000000ull
static struct tg_tuner turn;

/* Who gets the turn when others wait: slices (detectors/tuner_table.h,
 * "Slices") of TG_TURN_SLICE_NS, CPython's own switch interval, shorter with
 * many waiters so that the FIFO is served within half the bypass bound. */
#define TG_TURN_SLICE_NS 5000000ull

static void turn_slice_start(uint64_t now)
{
    tg_tuner_slice_start(&turn, now, TG_TURN_SLICE_NS, TG_TURN_BYPASS_NS / 2);
}

/* GIL held.  Uncontended (nobody waits): one load, one store, no clock. */
static inline void release_turn(struct tg_thread *t)
{
    if (__builtin_expect(turn.wq_head != NULL, 0))
        tg_tuner_slice_check(&turn, t, tg_mono_ns()); /* contended: one clock read */
    struct tg_thread *w = tg_tuner_unlock(&turn, t);
    if (__builtin_expect(w != NULL, 0))
        tg_park_wake(&w->park);
}

/* Block for the turn, at most TG_TURN_BYPASS_NS.  GIL held on entry and
 * exit, released while blocked.  Returns 1 with the turn, 0 without it (gone
 * on without), -1 when a signal handler raised (the wait abandoned, nothing
 * held).  inst: the tuner the call is for (the summary's contended list, the
 * trace). */
static int wait_for_turn(struct tg_thread *t, PyObject *inst)
{
    uint64_t t0 = tg_mono_ns();
    if (turn.waiters == 0)
        turn_slice_start(t0); /* the holder is waited for from now on */
    tg_tuner_wait_push(&turn, t);
    pid_t holder_tid = (pid_t)__atomic_load_n(&turn.owner, __ATOMIC_RELAXED);
    tg_py.PySys_Audit("tunerguard.serialize_wait", "(k)", (unsigned long)holder_tid);
    tg_py.PyErr_Clear();
    struct tg_tuner *u = tg_tuner_find((uintptr_t)inst); /* Python code ran: look it up again */
    if (u && !u->noted) {
        u->noted = 1;
        note_contended(inst);
    }
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_begin(t, holder_tid, (uintptr_t)inst);
    const int main_thread = t->tid == getpid();
    int got = 0, rc;
    for (;;) {
        uint64_t now = tg_mono_ns();
        if (now - t0 >= TG_TURN_BYPASS_NS) {
            got = tg_tuner_try_lock(&turn, (uint32_t)t->tid); /* a last try, then on without it */
            break;
        }
        uint64_t slice = t0 + TG_TURN_BYPASS_NS - now;
        if (main_thread && slice > 50000000ull)
            slice = 50000000ull; /* signal handlers run in the main thread */
        if ((got = park_for(&turn, t, slice, t0, 0, &rc)))
            break;
        if (wait_interrupted(&turn, t, rc, main_thread))
            return -1;
    }
    uint64_t dt = tg_mono_ns() - t0;
    tg_tuner_wait_remove(&turn, t);
    if (got)
        turn_slice_start(t0 + dt); /* this thread's slice */
    if (!got) {
        /* A holder that died keeps the turn: free it for the others. */
        pid_t dead[1];
        unsigned long ident[1];
        struct tg_thread *w;
        tg_tuner_reap(&turn, tg_tid_alive, dead, ident, 1, &w);
        if (w)
            tg_park_wake(&w->park);
    }
    tg__gstats.waits++;
    tg__gstats.wait_ns += dt;
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_end(t);
    return got;
}

/* ---- the guard itself ------------------------------------------------------ */

/* The original takes self first: rebuild the vector [self, args..., kwargs...].
 * A method descriptor's caller keeps self right before args (descrobject.c
 * passes args + 1), but that is CPython's detail, so copy: on the stack up to
 * 32 entries, else one allocation (a call with more than 31 arguments). */
static PyObject *guard_call(struct tg_guard *g, PyObject *self, PyObject *const *args0, Py_ssize_t nargs0,
                            PyObject *kwnames);

PyObject *tg__guard_entry(struct tg_guard *g, PyObject *self, PyObject *const *a, Py_ssize_t n,
                          PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? tg_py.PyTuple_Size(kwnames) : 0;
    PyObject *stack[32];
    PyObject **v = stack;
    if (n + nkw + 1 > 32) {
        v = malloc(sizeof(PyObject *) * (size_t)(n + nkw + 1));
        if (!v)
            return NULL;
    }
    v[0] = self;
    memcpy(v + 1, a, sizeof(PyObject *) * (size_t)(n + nkw));
    PyObject *res = guard_call(g, self, (PyObject *const *)v, n + 1, kwnames);
    if (v != stack)
        free(v);
    return res;
}

static PyObject *guard_call(struct tg_guard *g, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    (void)self; /* == args[0] */
    struct tg_thread *t = tg__self();
    if (__builtin_expect(nargs < 1 || t->busy || tg_opts.mode == TG_MODE_OFF, 0))
        return call_orig(g, args, nargs, kwnames);
    if (__builtin_expect(g->chains, 0)) {
        /* The program's own wrapper around the original (seeds/001's
         * `Autotuner.run = wrapped`, calling the original): not where the
         * shared state is touched, so no session here; the original's guard
         * starts one.  Note whether another thread is inside now: if this
         * thread finds the tuner free when it reaches the original, the
         * wrapper made it wait (a lock), said once at verbosity=1. */
        struct tg_tuner *pu = tg_tuner_find((uintptr_t)args[0]);
        uintptr_t saved_busy = t->wrapped_busy;
        const void *saved_by = t->wrapped_by;
        if (pu && pu->nocc > 0 && !tg_tuner_is_inside(pu, t)) {
            t->wrapped_busy = (uintptr_t)args[0];
            t->wrapped_by = g;
        }
        PyObject *res = call_orig(g, args, nargs, kwnames);
        t->wrapped_busy = saved_busy;
        t->wrapped_by = saved_by;
        return res;
    }
    if (g->marker) {
        /* A tuning method (Autotuner._bench, ...): no session, only the
         * evidence that this thread is tuning (tg__other_is_tuning). */
        t->tuning++;
        t->session_tuned = 1;
        PyObject *res = call_orig(g, args, nargs, kwnames);
        t->tuning--;
        return res;
    }
    if (__builtin_expect(tg_arm_pending, 0))
        tg_arm_process_pending();
    if (t->depth == 0) {
        t->busy++;
        tg__guard_check_replaced(g);
        t->busy--;
    }

    PyObject *inst = args[0];
    struct tg_tuner *u = tg_tuner_get((uintptr_t)inst);
    if (__builtin_expect(!u, 0)) {
        table_full();
        return call_orig(g, args, nargs, kwnames);
    }

    /* A thread that has made no CUDA call yet (cold cache: the first tunings
     * compile before they launch) is known by its current device, taken at
     * each outermost entry (it may switch devices).  After the thread's first
     * recorded CUDA call this is one load; before it, an atomic load while
     * libcuda is not in use, else two driver calls (reads of the driver's
     * thread state), on outermost entries only. */
    if (__builtin_expect(t->nheld == 0 && t->last.kind == TG_CUDA_NONE, 0))
        t->entry_device = tg_cuda_current_device();
    struct tg_race_link link = {0};
    int reported = 0; /* the race this call was about to have: reported before the turn's wait */
    if (tg_opts.mode == TG_MODE_SERIALIZE && t->nheld == 0 && !tg_tuner_try_lock(&turn, (uint32_t)t->tid)) {
        /* serialize, outermost: the turn first (above).  Someone inside this
         * very tuner is the race this wait prevents: said now, as a wait for
         * the tuner would. */
        const struct tg_occupant *other = u->nocc > 0 ? tg_tuner_other(u, t) : NULL;
        if (other && reap_dead(u, t, inst, g, tg__tid_alive_cached))
            other = tg_tuner_other(u, t);
        if (other) {
            u->races++;
            tg__report_race(u, inst, g, t, other, 1, &link);
            tg_stress_wake();
            reported = 1;
        }
        if (wait_for_turn(t, inst) < 0)
            return NULL; /* a signal handler raised (KeyboardInterrupt): nothing held */
        u = tg_tuner_get((uintptr_t)inst); /* Python code ran */
        if (__builtin_expect(!u, 0)) {
            release_turn(t);
            table_full();
            return call_orig(g, args, nargs, kwnames);
        }
    }
    enum tg_verdict v = tg_tuner_decide(u, t, tg_opts.mode);
    /* Contended entry: is every thread inside alive?  A thread that died
     * inside would otherwise be raced with, or waited for, forever.  tgkill(2)
     * at most every 100 ms per thread (tg__tid_alive_cached): contended
     * entries are the common case of tuned calls from several threads. */
    if (__builtin_expect(v == TG_RACE || v == TG_WAIT, 0) && reap_dead(u, t, inst, g, tg__tid_alive_cached))
        v = tg_tuner_decide(u, t, tg_opts.mode);
    if (v == TG_NESTED) { /* (t->nheld > 0: no turn was taken above) */
        struct tg_occupant *no = tg_tuner_enter(u, t, NULL, g, 0, 1);
        if (no && no->method != g && !g->replacement && ((struct tg_guard *)no->method)->replacement) {
            /* A replacement calling the original on the same instance: the
             * program's own wrapper; its later calls pass through. */
            struct tg_guard *w = (struct tg_guard *)no->method;
            if (!w->chains)
                tg__info(2, "%s%s calls the original: a wrapper, its calls pass through", w->method, w->where);
            w->chains = 1;
        }
        t->depth++;
        PyObject *res = call_orig(g, args, nargs, kwnames);
        t->depth--;
        if (no)
            tg_tuner_leave(u, t);
        return res;
    }
    if (v != TG_FIRST) {
        const struct tg_occupant *other = reported ? NULL : tg_tuner_other(u, t);
        if (other) { /* none: a woken waiter owns the lock and has not entered yet */
            u->races++;
            tg__report_race(u, inst, g, t, other, v == TG_WAIT, &link);
            tg_stress_wake(); /* stress=1: the race showed; end the holds (shim/cuda_stress.h) */
            /* The report ran Python code: the entry may have been given back. */
            u = tg_tuner_get((uintptr_t)inst);
            if (__builtin_expect(!u, 0)) {
                if (t->nheld == 0)
                    release_turn(t);
                table_full();
                return call_orig(g, args, nargs, kwnames);
            }
        }
        if (v == TG_WAIT) {
            if (wait_for_tuner(u, t, inst, g) < 0) {
                if (t->nheld == 0)
                    release_turn(t);
                return NULL; /* a signal handler raised (KeyboardInterrupt): nothing held */
            }
        } else if (tg_tuner_decide(u, t, tg_opts.mode) == TG_FIRST)
            link.tid = 0; /* the report let the other thread finish: no overlap left */
    }
    if (v != TG_FIRST) {
        /* The report and the wait let other threads run: the entry may have
         * been given back meanwhile (detectors/tuner_table.h). */
        u = tg_tuner_get((uintptr_t)inst);
        if (__builtin_expect(!u, 0)) {
            if (t->nheld == 0)
                release_turn(t);
            table_full();
            return call_orig(g, args, nargs, kwnames);
        }
    }
    if (t->nheld == 0) {
        t->session_launches = 0;
        t->session_syncs = 0;
        t->session_tuned = 0;
    }
    if (__builtin_expect(t->wrapped_busy == (uintptr_t)inst, 0) && v == TG_FIRST && t->wrapped_by) {
        /* Entered the wrapper while another thread was inside, and found the
         * tuner free here: the wrapper serialized it. */
        struct tg_guard *w = (struct tg_guard *)t->wrapped_by;
        if (!w->said_serializes) {
            w->said_serializes = 1;
            const char *where = strncmp(w->where, " by ", 4) == 0 ? w->where + 4 : "its replacement";
            tg__info(1, "%s is wrapped by the program (%s), and the wrapper serializes its callers (a thread "
                        "that came in while another was inside waited in it): no race through it", w->method, where);
        }
        t->wrapped_busy = 0;
    }
    struct tg_occupant *o = tg_tuner_enter(u, t, tg_py.PyThreadState_Get(), g, tg_ticks(), 0);
    if (o && link.tid) {
        o->raced_tid = link.tid;
        snprintf(o->raced_name, sizeof o->raced_name, "%s", link.name);
        o->race_seq = link.seq;
    }
    if (t->nheld < TG_MAX_HELD)
        t->held[t->nheld] = u;
    t->nheld++;
    t->depth++;
    t->tuning += g->tuning_entry;
    if (__builtin_expect(tg_trace_on, 0)) { /* trace=1: the session's slice */
        char k_[128]; t->busy++; tg_py_kernel_name(inst, k_, sizeof k_); t->busy--;
        tg_trace_session_begin(t, g->method, k_, (uintptr_t)inst); }

    PyObject *res = call_orig(g, args, nargs, kwnames);

    /* Another thread inside (rare; one load otherwise): did this return run
     * under its benchmarking?  Only a call that returned: an exception may
     * leave before the tuner's own `self.nargs = None`. */
    if (__builtin_expect(u->nocc > 1, 0) && g->clears_args && o && o->depth == 1 && res != NULL)
        tg__check_race_at_exit(u, inst, g, t, o);
    if (__builtin_expect(res == NULL, 0) && o && o->raced_tid && o->depth == 1)
        tg__report_exception(inst, g, t, o);
    t->tuning -= g->tuning_entry;
    t->depth--;
    t->nheld--;
    unlock_tuner(u, t); /* serialize: the lock goes before the slot can be given back */
    tg_tuner_leave(u, t);
    if (t->nheld == 0)
        release_turn(t); /* no-op unless this thread holds the turn */
    if (t->nheld == 0) tg_tuning_session_end(t, inst); /* shim/cuda_stress.h */
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_session_end(t);
    return res;
}

/* ---- the summary ----------------------------------------------------------- */

/* fork child: what the parent saw is the parent's to report. */
void tg_guard_atfork_child(void)
{
    int guards_kept = tg__gstats.guards;
    memset(&tg__gstats, 0, sizeof tg__gstats);
    tg__gstats.guards = guards_kept;
    ncontended = 0;
    memset(&turn, 0, sizeof turn); /* its holder and waiters are the parent's */
    memset(alive_cache, 0, sizeof alive_cache);
}

void tg_guard_stats(struct tg_guard_stats *out)
{
    *out = tg__gstats;
}

void tg_guard_contended(char *buf, int len)
{
    int used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ncontended && used < len; i++)
        used += snprintf(buf + used, (size_t)(len - used), "%s%s", i ? ", " : "", contended[i]);
}
