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

/* Release the holds of threads that died inside u, and report each.
 * Returns how many.  GIL held. */
static int reap_dead(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g)
{
    pid_t dead[TG_TUNER_MAX_OCC];
    unsigned long ident[TG_TUNER_MAX_OCC];
    int n = tg_tuner_reap(u, tg_tid_alive, dead, ident, TG_TUNER_MAX_OCC);
    if (n > 0)
        tg__report_holders_died(t, inst, g, dead, ident, n < TG_TUNER_MAX_OCC ? n : TG_TUNER_MAX_OCC);
    return n;
}

/* Serialize: block until nobody is inside u and, for a thread holding no
 * tuner, its turn in u's queue has come (the queue: detectors/tuner_table.h).
 * GIL held on entry and exit, released while blocked.  Returns 1 when the
 * caller may enter u, or 0 when a cycle of waits was found and the policy
 * lets this thread proceed unserialized. */
static int wait_for_tuner(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g)
{
    /* Pinned: u stays this instance's entry while Python code runs below
     * (reports, audit hooks), which lets other threads leave and enter. */
    tg_tuner_pin(u);
    struct tg_tuner *path[16];
    int n = tg_tuner_wait_cycle(u, t, path, 16);
    if (n > 0 && tg__report_deadlock(u, t, inst, g, path, n)) {
        tg_tuner_unpin(u);
        return 0;
    }
    /* A ticket only once no early return is left: a ticket never served
     * would hold up everyone queued behind it (for TG_TUNER_SKIP_NS). */
    int queued = t->nheld == 0;
    uint32_t ticket = queued ? tg_tuner_take_ticket(u) : 0;
    const struct tg_occupant *holder = tg_tuner_other(u, t);
    pid_t holder_tid = holder ? holder->tid : 0;
    holder = NULL; /* the audit hooks below are Python code: other threads may run */
    /* Tell observers (the reproducers' barriers) that this thread is about to
     * block in tunerguard rather than run.  Cheap, and only on contention. */
    tg_py.PySys_Audit("tunerguard.serialize_wait", "(k)", (unsigned long)holder_tid);
    tg_py.PyErr_Clear();
    note_contended(inst);
    uint64_t t0 = tg_mono_ns();
    int timed_out = 0;
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_begin(t, holder_tid, (uintptr_t)inst);
    t->waiting_for = u;
    int woke = 0;                /* a pass of the loop after the first */
    uint32_t turn_seen = u->ticket_turn;
    uint64_t free_seen = 0;      /* when u was first seen free with turn_seen unserved */
    while (tg_tuner_must_wait(u, ticket, queued)) {
        if (woke) {
            uint64_t now = tg_mono_ns();
            tg_tuner_passed_over(u, now - t0);
            if (u->ticket_turn != turn_seen) {
                turn_seen = u->ticket_turn;
                free_seen = 0;
            }
            if (queued && u->nocc == 0) { /* free, but another ticket's turn */
                if (!free_seen) {
                    free_seen = now;
                } else if (now - free_seen >= TG_TUNER_SKIP_NS) {
                    /* Its thread never came (it ended while waiting for the
                     * GIL, as daemon threads do at interpreter exit). */
                    tg_tuner_skip_head(u, turn_seen);
                    free_seen = 0;
                    continue;
                }
            }
        }
        woke = 1;
        if (!u->cond_ready) {
            pthread_condattr_t ca;
            pthread_condattr_init(&ca);
            pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
            pthread_cond_init(&u->cond, &ca);
            pthread_condattr_destroy(&ca);
            u->cond_ready = 1;
        }
        u->waiters++;
        PyThreadState *ts = tg_py.PyEval_SaveThread();
        pthread_mutex_lock(&tg_tuner_wait_mu);
        int rc = 0;
        /* Wake at least every second to check that the holders still live
         * (reap_dead), and at wait_timeout to report the long wait. */
        uint64_t deadline = t0 + (uint64_t)tg_opts.wait_timeout * 1000000000ull;
        uint64_t wake = tg_mono_ns() + 1000000000ull;
        if (!timed_out && deadline < wake)
            wake = deadline;
        struct timespec ts_wake = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};
        /* One wait per pass: a wake-up that finds the tuner taken again goes
         * back through the GIL, so the pass above counts it as passed over. */
        if (tg_tuner_must_wait(u, ticket, queued))
            rc = pthread_cond_timedwait(&u->cond, &tg_tuner_wait_mu, &ts_wake);
        pthread_mutex_unlock(&tg_tuner_wait_mu);
        tg_py.PyEval_RestoreThread(ts);
        u->waiters--;
        if (rc == ETIMEDOUT && tg_tuner_must_wait(u, ticket, queued)) {
            reap_dead(u, t, inst, g);
            if (!timed_out && tg_mono_ns() >= deadline) {
                timed_out = 1; /* once per wait; the wait goes on */
                tg__report_wait_timeout(u, t, inst, g, tg_mono_ns() - t0);
            }
        }
        /* Another thread may have entered while we waited for the GIL: loop. */
    }
    t->waiting_for = NULL;
    uint64_t dt = tg_mono_ns() - t0;
    tg_tuner_served(u, ticket, queued, dt);
    tg_tuner_unpin(u); /* the caller enters now, with no Python code between */
    tg__gstats.waits++;
    tg__gstats.wait_ns += dt;
    u->waits++;
    u->wait_ns += dt;
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_end(t);
    return 1;
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
    PyObject *orig = g->orig;
    struct tg_thread *t = tg__self();
    if (__builtin_expect(nargs < 1 || t->busy || tg_opts.mode == TG_MODE_OFF, 0))
        return call_orig(g, args, nargs, kwnames);
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
    enum tg_verdict v = tg_tuner_decide(u, t, tg_opts.mode);
    /* Contended entry: one tgkill(2) per thread inside, because a thread that
     * died inside would otherwise be raced with, or waited for, forever. */
    if (__builtin_expect(v == TG_RACE || v == TG_WAIT, 0) && reap_dead(u, t, inst, g))
        v = tg_tuner_decide(u, t, tg_opts.mode);
    if (v == TG_NESTED) {
        struct tg_occupant *no = tg_tuner_enter(u, t, NULL, orig, 0, 1);
        t->depth++;
        PyObject *res = call_orig(g, args, nargs, kwnames);
        t->depth--;
        if (no)
            tg_tuner_leave(u, t);
        return res;
    }
    struct tg_race_link link = {0};
    if (v != TG_FIRST) {
        const struct tg_occupant *other = tg_tuner_other(u, t);
        if (other) { /* none: serialize's queue made a free tuner TG_WAIT */
            u->races++;
            tg__report_race(u, inst, g, t, other, v == TG_WAIT, &link);
            tg_stress_wake(); /* stress=1: the race showed; end the holds (shim/cuda_stress.h) */
            /* The report ran Python code: the entry may have been given back. */
            u = tg_tuner_get((uintptr_t)inst);
            if (__builtin_expect(!u, 0)) {
                table_full();
                return call_orig(g, args, nargs, kwnames);
            }
        }
        if (v == TG_WAIT)
            wait_for_tuner(u, t, inst, g);
        else if (tg_tuner_decide(u, t, tg_opts.mode) == TG_FIRST)
            link.tid = 0; /* the report let the other thread finish: no overlap left */
    }
    if (v != TG_FIRST) {
        /* The report and the wait let other threads run: the entry may have
         * been given back meanwhile (detectors/tuner_table.h). */
        u = tg_tuner_get((uintptr_t)inst);
        if (__builtin_expect(!u, 0)) {
            table_full();
            return call_orig(g, args, nargs, kwnames);
        }
    }
    if (t->nheld == 0) {
        t->session_launches = 0;
        t->session_syncs = 0;
    }
    struct tg_occupant *o = tg_tuner_enter(u, t, tg_py.PyThreadState_Get(), orig, tg_ticks(), 0);
    if (o && link.tid) {
        o->raced_tid = link.tid;
        snprintf(o->raced_name, sizeof o->raced_name, "%s", link.name);
        o->race_seq = link.seq;
    }
    if (t->nheld < TG_MAX_HELD)
        t->held[t->nheld] = u;
    t->nheld++;
    t->depth++;
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
    t->depth--;
    t->nheld--;
    tg_tuner_leave(u, t);
    if (t->nheld == 0) tg_tuning_session_end(t, inst, &tg__gstats.reports); /* shim/cuda_stress.h */
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
    tg__capture_atfork_child();
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
