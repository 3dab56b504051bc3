/* The session policy of a guarded call.  A call:
 *
 *     guard(self, *args, **kw)         (a trampoline, guard/guard_install.c)
 *         enter(self, this thread)     -- nested / first / race / wait
 *         original(self, *args, **kw)
 *         leave(self, this thread)
 *
 * The verdict is the tuner table's (detectors/tuner_table.h); the reports
 * the call may give are filled in guard/report_capture.c, the serialize
 * waits and the turn in guard/serialize_wait.c.  Here: the guarded call
 * itself (a hot path).
 *
 * Everything here runs with the GIL held, except the serialize wait, which
 * releases it while it blocks. */
#include "guard/guard_internal.h"
#include "guard/serialize_wait.h"
#include "guard/gil_state.h"
#include "core/clock.h"
#include "core/insitu.h"
#include "core/log.h"
#include "core/park.h"
#include "core/options.h"
#include "core/py_attr.h"
#include "core/thread_hold.h"
#include "core/thread_state.h"
#include "reports/trace.h"
#include "cuda/cuda_hooks.h"
#include "cuda/cuda_stress.h"
#include "loader/py_arm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PyObject *session_exit(struct tg_guard *g, struct tg_thread *t, PyObject *inst, struct tg_tuner *u,
                              struct tg_occupant *o, uint32_t epoch, PyObject *res);

/* ---- the guard itself ------------------------------------------------------ */

/* The original takes self first: rebuild the vector [self, args..., kwargs...].
 * A method descriptor's caller keeps self right before args (descrobject.c
 * passes args + 1), but that is CPython's detail, so copy: on the stack up to
 * 32 entries, else one allocation (a call with more than 31 arguments). */
static inline __attribute__((always_inline)) PyObject *guard_call(struct tg_guard *g, struct tg_thread *t, PyObject *f,
                                                                  PyObject *const *args0, Py_ssize_t nargs0,
                                                                  PyObject *kwnames);

PyObject *tg__guard_entry(struct tg_guard *g, PyObject *self, PyObject *const *a, Py_ssize_t n,
                          PyObject *kwnames)
{
#ifdef TG_INSITU
    const uint64_t is0 = TG_IS_TICKS();
#endif
    Py_ssize_t nkw = kwnames ? tg_py.PyTuple_Size(kwnames) : 0;
    PyObject *stack[32];
    PyObject **v = stack;
    if (n + nkw + 1 > 32) {
        v = malloc(sizeof(PyObject *) * (size_t)(n + nkw + 1));
        if (!v)
            return tg_py.PyErr_NoMemory ? tg_py.PyErr_NoMemory() : NULL; /* MemoryError, as the call itself would */
    }
    v[0] = self;
    memcpy(v + 1, a, sizeof(PyObject *) * (size_t)(n + nkw));
    /* The count of guarded calls the thread is in, and one load after: an
     * exception of the program's that our own look-ups met inside the call
     * (a Ctrl-C whose handler ran in one) is raised here (core/py_attr.h). */
    struct tg_thread *t = tg__self_fast();
    t->guard_frames++;
#ifdef TG_INSITU
    tg__gthread(t)->insitu_orig = 0; /* stays 0 if the original is not called */
#endif
    PyObject *res = guard_call(g, t, g->orig, (PyObject *const *)v, n + 1, kwnames);
    t->guard_frames--;
    if (v != stack)
        free(v);
    if (__builtin_expect(t->kept_exc[0] != NULL, 0))
        res = tg_py_raise_kept(t, res);
#ifdef TG_INSITU
    tg__insitu_count(t, is0);
#endif
    return res;
}

/* The function's own vector is the original's: self first, nothing to copy. */
PyObject *tg__guard_vcall(struct tg_guard *g, PyObject *func, PyObject *const *args, size_t nargsf,
                          PyObject *kwnames)
{
#ifdef TG_INSITU
    const uint64_t is0 = TG_IS_TICKS();
#endif
    /* Free-threaded: the caller's load of the slot (CPython's, plain) before
     * our reads of g, which tg__vc_install (guard/vc_slot.c) filled before
     * its release store.  No instruction on x86-64; a load barrier on AArch64. */
    if (tg_py.free_threaded)
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    struct tg_thread *t = tg__self_fast();
    t->guard_frames++;
#ifdef TG_INSITU
    tg__gthread(t)->insitu_orig = 0;
#endif
    PyObject *res = guard_call(g, t, func, args, (Py_ssize_t)(nargsf & ~TG_VECTORCALL_OFFSET), kwnames);
    t->guard_frames--;
    if (__builtin_expect(t->kept_exc[0] != NULL, 0))
        res = tg_py_raise_kept(t, res);
#ifdef TG_INSITU
    tg__insitu_count(t, is0);
#endif
    return res;
}

/* ---- the guarded call, phase by phase -------------------------------------------
 *
 * guard_call: the calls that start no session (pass-through, the program's
 * own wrapper, a tuning method, detect's unregistered session), then the way
 * into a registered session: serialize's turn (take_turn), the verdict and
 * what it asks, a report and a wait (decide), and the session itself
 * (run_session).  A phase that cannot go on ends the call one of two ways:
 * the instance has no entry in a full table (pass_through_full), or a signal
 * handler raised while it waited (interrupted).  Everything here: GIL held,
 * t the calling thread's own record. */

/* Why an entry stopped before its session began. */
enum tg_entry_end {
    TG_ENTRY_GO,          /* on to the session */
    TG_ENTRY_NESTED,      /* t is inside the instance already: a nested level */
    TG_ENTRY_FULL,        /* no entry for the instance (table full): pass through */
    TG_ENTRY_INTERRUPTED, /* a signal handler raised: the call is not made */
};

/* What the entry learned on its way in. */
struct tg_entry {
    struct tg_tuner *u;        /* the instance's entry, looked up again after Python code ran */
    enum tg_verdict v;
    int low_severity;          /* a low-severity overlap, only counted */
    int reported;              /* the race was reported before the turn's wait */
    int waited_turn;           /* it waited for the turn: counted as a serialized call */
    struct tg_race_link link;  /* the race this call had, for its session */
};

/* The instance's entry again, after Python code ran (a report, a wait: the
 * entry may have been given back meanwhile, detectors/tuner_table.h). */
static enum tg_entry_end relook(struct tg_entry *e, PyObject *inst)
{
    e->u = tg_tuner_get((uintptr_t)inst);
    return __builtin_expect(e->u != NULL, 1) ? TG_ENTRY_GO : TG_ENTRY_FULL;
}

/* The one bail-out: the table is full, the call runs unguarded (the turn,
 * if this outermost call took it, given back). */
static PyObject *pass_through_full(struct tg_guard *g, struct tg_thread *t, PyObject *f, PyObject *const *args,
                                   Py_ssize_t nargs, PyObject *kwnames)
{
    if (t->nheld == 0)
        tg__release_turn(t);
    tg__table_full();
    return tg__call_orig(g, f, args, nargs, kwnames);
}

/* A signal handler's exception came out of our own Python code (a wait, a
 * report, a wait's audit hook): the program interrupted this call, so it is
 * not made.  What the entry took is given back (u's lock in serialize, the
 * turn, and the entry itself if nobody uses it: looked up again, Python code
 * ran since); tg__guard_entry raises the exception. */
static PyObject *interrupted(const struct tg_entry *e, struct tg_thread *t, PyObject *inst)
{
    if (e->u)
        tg__unlock_tuner(e->u, t);
    if (t->nheld == 0)
        tg__release_turn(t);
    struct tg_tuner *u = tg_tuner_find((uintptr_t)inst);
    if (u)
        tg_tuner_release_if_unused(u);
    return NULL;
}

/* Does t run a tuning method on inst while it holds no session on inst?
 * (Its unregistered session registered first: marker_call.)  A look-up
 * of the tuner table only where t is inside some tuner. */
static int tuning_outside(const struct tg_thread *t, PyObject *inst)
{
    if (__builtin_expect(t->depth == 0, 0))
        return 1;
    struct tg_tuner *u = tg_tuner_find((uintptr_t)inst);
    return !u || !tg_tuner_is_inside(u, t);
}

/* A tuning method (Autotuner._bench, ...): no session, only the evidence
 * that this thread is tuning (tg__other_is_tuning).  An unregistered session
 * becomes a registered one first, so that the evidence lands on its tuner
 * where entering threads look. */
static __attribute__((noinline)) PyObject *marker_call(struct tg_guard *g, struct tg_thread *t, PyObject *f,
                                                       PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    uintptr_t li = __atomic_load_n(&t->lazy_inst, __ATOMIC_RELAXED); /* an adopter may claim it: an exchange */
    if (__builtin_expect(li != 0, 0))
        tg__lazy_register(t, li);
    if (__builtin_expect(nargs >= 1, 1) && tuning_outside(t, args[0])) {
        t->busy++;
        tg__guard_tuning_outside(args[0]);
        t->busy--;
    }
    TG_OWN_SET(t->tuning, t->tuning + 1);
    if (t->tuning == 1) {
        __atomic_fetch_add(&tg__tuning_threads, 1, __ATOMIC_RELAXED);
        TG_OWN_SET(t->tuning_step, (const void *)g);
        tg_tuning_seen(); /* this thread is tuning from here: the exit checks look (cuda/cuda_hooks.h) */
        tg_tuner_mark_evidence(t, TG_EV_TUNING); /* and an entering thread sees it on the tuners t holds */
    }
    if (__builtin_expect(g->declared, 0) && nargs >= 1 && t->depth > 0) /* also inside another tuner's step */
        tg__check_race_at_step(args[0], g, t); /* a declared tuner's step (tuning=): anyone else inside? */
    else if (g->reads_args && nargs >= 1 && t->depth > 0 && tg_opts.mode == TG_MODE_DETECT)
        tg__check_cleared_at_tuning(args[0], t); /* a benchmark: were its arguments cleared meanwhile? */
    TG_OWN_SET(t->session_tuned, 1);
    PyObject *res = tg__call_orig(g, f, args, nargs, kwnames);
    TG_OWN_SET(t->tuning, t->tuning - 1);
    if (t->tuning == 0)
        __atomic_fetch_sub(&tg__tuning_threads, 1, __ATOMIC_RELAXED);
    return res;
}

_Atomic uint32_t tg__tuning_threads; /* guard/guard_internal.h */

/* serialize, outermost: the process-wide turn first (guard/serialize_wait.h),
 * where the GIL is on (guard/gil_state.h: without it the turn would run the
 * program's tuned calls one at a time; the tuners' own locks are what
 * correctness needs).  Someone inside this very tuner is the race this wait
 * prevents: said now, as a wait for the tuner would. */
static enum tg_entry_end take_turn(struct tg_entry *e, struct tg_guard *g, struct tg_thread *t, PyObject *inst)
{
    if (tg_opts.mode != TG_MODE_SERIALIZE || t->nheld != 0 || !tg__gil_on() || tg__try_turn(t))
        return TG_ENTRY_GO;
    /* Nobody inside this tuner nor waiting for it while a thread tunes (the
     * turn's holder, most likely, for seconds): the turn would only hold
     * this call up behind another kernel's tuning.  Its tuner's lock is
     * enough; the turn's fairness is for threads that meet in one tuner. */
    if (__atomic_load_n(&tg__tuning_threads, __ATOMIC_RELAXED) > 0 && TG_NOCC(e->u) == 0 &&
        __atomic_load_n(&e->u->waiters, __ATOMIC_RELAXED) == 0)
        return TG_ENTRY_GO;
    if (tg_py_finalizing()) /* its holder may never come back (decide) */
        return TG_ENTRY_GO;
    if (tg_py.free_threaded && !tg__gil_refresh()) /* asked again before a wait: the GIL went off */
        return TG_ENTRY_GO;
    struct tg_occupant oc; /* a copy: without the GIL its slot may be left meanwhile */
    const struct tg_occupant *other = TG_NOCC(e->u) > 0 ? tg_tuner_other(e->u, t, &oc) : NULL;
    if (other && tg__reap_dead(e->u, t, inst, g, tg__tid_alive_cached))
        other = tg_tuner_other(e->u, t, &oc);
    if (other) {
        tg__report_race(e->u, inst, g, t, other, 1, &e->link);
        tg_stress_wake();
        e->reported = 1;
    }
    e->u = NULL; /* Python code runs from here: looked up again */
    if (tg__wait_for_turn(t, inst, g->method) < 0)
        return TG_ENTRY_INTERRUPTED;
    e->waited_turn = 1;
    return relook(e, inst);
}

/* The verdict on the instance and what it asks: nothing (first in), a
 * nested level, a low-severity overlap (counted), or a race, reported, and in
 * serialize a wait for the tuner. */
static enum tg_entry_end decide(struct tg_entry *e, struct tg_guard *g, struct tg_thread *t, PyObject *inst)
{
    e->v = tg_tuner_decide(e->u, t, tg_opts.mode);
    /* The interpreter finalizes (a __del__ or a finalizer calling a tuner):
     * a thread inside now never leaves (daemon threads stop where they are,
     * or end in pthread_exit), so nobody is waited for and no thread is
     * counted dead; the call goes in as in detect.  One function call, on
     * contended entries only. */
    const int fin = __builtin_expect(e->v == TG_RACE || e->v == TG_WAIT, 0) && tg_py_finalizing();
    if (fin && e->v == TG_WAIT)
        e->v = TG_RACE;
    /* Contended entry: is every thread inside alive?  A thread that died
     * inside would otherwise be raced with, or waited for, forever.  tgkill(2)
     * at most every 100 ms per thread (tg__tid_alive_cached): contended
     * entries are the common case of tuned calls from several threads. */
    if (__builtin_expect(e->v == TG_RACE || e->v == TG_WAIT, 0) && !fin &&
        tg__reap_dead(e->u, t, inst, g, tg__tid_alive_cached))
        e->v = tg_tuner_decide(e->u, t, tg_opts.mode);
    if (e->v == TG_NESTED) /* (t->nheld > 0: no turn was taken) */
        return TG_ENTRY_NESTED;
    if (e->v == TG_FIRST)
        return TG_ENTRY_GO;
    /* The common case of several threads calling tuned kernels, decided on
     * u's first line alone: nobody inside shows evidence, so this is a
     * low-severity overlap, only counted (tg__report_race says the same after
     * looking at the occupants).  No Python code runs on its way in, so u
     * needs no second look-up. */
    e->low_severity = e->v == TG_RACE && tg__overlap_is_low_severity(e->u, g);
    if (e->low_severity) {
        tg_tuner_add_overlap(e->u);
        tg_stress_wake(); /* as after a report (stress=1: no-op otherwise) */
        return TG_ENTRY_GO;
    }
    struct tg_occupant oc; /* a copy: without the GIL its slot may be left meanwhile */
    const struct tg_occupant *other = e->reported ? NULL : tg_tuner_other(e->u, t, &oc);
    if (other) { /* none: a woken waiter owns the lock and has not entered yet */
        tg__report_race(e->u, inst, g, t, other, e->v == TG_WAIT, &e->link);
        tg_stress_wake(); /* stress=1: the race showed; end the holds (cuda/cuda_stress.h) */
        if (relook(e, inst) != TG_ENTRY_GO) /* the report ran Python code */
            return TG_ENTRY_FULL;
    }
    if (e->v == TG_WAIT) {
        tg__gthread(t)->wait_call_counted = e->waited_turn; /* one call, one count, however many waits */
        const int rc = tg__wait_for_tuner(e->u, t, inst, g);
        tg__gthread(t)->wait_call_counted = 0;
        if (rc < 0)
            return TG_ENTRY_INTERRUPTED;
    } else if (tg_tuner_decide(e->u, t, tg_opts.mode) == TG_FIRST) {
        e->link.tid = 0; /* the report let the other thread finish: no overlap left */
    }
    return relook(e, inst);
}

/* A nested level on an instance t is inside already (a subclass's run calling
 * super().run(), run calling warmup): depth, never a race. */
static PyObject *nested_call(struct tg_guard *g, struct tg_thread *t, struct tg_tuner *u, PyObject *f,
                             PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    struct tg_occupant *no = tg_tuner_enter(u, t, NULL, g, 0, 1);
    struct tg_guard *ends_wrapper = NULL;
    if (no && no->method != g && !g->replacement && ((struct tg_guard *)no->method)->replacement) {
        /* A replacement calling the original on the same instance: the
         * program's own wrapper; its later calls pass through. */
        struct tg_guard *w = (struct tg_guard *)no->method;
        if (!__atomic_exchange_n(&w->chains, 1, __ATOMIC_RELAXED))
            tg__info(2, "%s%s calls the original: a wrapper, its calls pass through", w->method, w->where);
        /* Its session (this first call's, the slot's outer level) ends as
         * the original returns, as a later call's: what the wrapper does
         * after (release its lock) is outside the tuner. */
        ends_wrapper = no->depth == 2 ? w : NULL;
    }
    const unsigned forks = tg__gthread(t)->forks;
    t->depth++;
    PyObject *res = tg__call_orig(g, f, args, nargs, kwnames);
    if (__builtin_expect(tg__gthread(t)->forks != forks, 0))
        return res; /* forked inside, and this is the child: see run_session */
    t->depth--;
    if (no)
        tg_tuner_leave(u, t);
    if (__builtin_expect(ends_wrapper != NULL, 0)) /* its entry's epoch unknown: one that makes the check */
        return session_exit(ends_wrapper, t, args[0], u, no, __atomic_load_n(&tg__tuning_epoch, __ATOMIC_RELAXED) - 1,
                            res); /* run_session sees t->nheld fall */
    return res;
}

/* The registered session: entered, the original called, left
 * (session_exit). */
static PyObject *run_session(struct tg_guard *g, struct tg_thread *t, PyObject *inst, struct tg_entry *e,
                             PyObject *f, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    struct tg_tuner *u = e->u;
    if (t->nheld == 0) {
        /* The evidence line is written only where it changes (core/thread_state.h). */
        TG_OWN_SET(t->session_launches, 0u);
        if (__builtin_expect(t->session_syncs | t->session_multi | (uint32_t)t->session_tuned, 0))
            TG_OWN_SET(t->session_syncs, 0u), TG_OWN_SET(t->session_multi, 0u), TG_OWN_SET(t->session_tuned, 0);
    }
    if (__builtin_expect(tg__gthread(t)->wrapped_busy == (uintptr_t)inst, 0) && e->v == TG_FIRST &&
        tg__gthread(t)->wrapped_by)
        tg__note_wrapper_serializes(t);
    /* Read before this session's entry time: an occupant that enters after
     * it and tunes, or enters already tuning (a tuner called from another's
     * benchmark), moves the epoch after this read, since entries hold the
     * GIL from here to tg_tuner_enter (the exit check in session_exit). */
    const uint32_t epoch = __atomic_load_n(&tg__tuning_epoch, __ATOMIC_RELAXED);
    if (__builtin_expect(tg_thread_tuning(t), 0))
        tg_tuning_seen();
    const uint64_t now = tg_ticks();
    struct tg_occupant *o = tg_tuner_enter(u, t, tg__entry_tstate(), g, now, 0);
    if (o && e->link.tid) {
        tg__link_set(u, o, e->link.tid, e->link.name, e->link.seq, 1);
    } else if (__builtin_expect(!o, 0)) {
        /* More threads inside than the entry has slots (seeds/004: ten):
         * listed for the links another thread's race makes (slotless.c),
         * and this session's own link stays on the thread, for its
         * exception. */
        if (t->nheld == 0)
            tg__slotless_enter(t, (uintptr_t)inst, tg_py.PyThreadState_Get(), now);
        if (e->link.tid) {
            tg__gthread(t)->ovf_raced_tid = e->link.tid;
            snprintf(tg__gthread(t)->ovf_raced_name, sizeof tg__gthread(t)->ovf_raced_name, "%s", e->link.name);
            tg__gthread(t)->ovf_race_seq = e->link.seq;
            tg__gthread(t)->ovf_inst = (uintptr_t)inst;
        }
    }
    if (t->nheld < TG_MAX_HELD) {
        t->held[t->nheld] = u;
        t->held_slot[t->nheld] = o ? (uint8_t)(o - u->occ) : 0xff;
    }
    const int nheld = t->nheld + 1;
    __atomic_store_n(&t->nheld, nheld, __ATOMIC_RELAXED); /* a stack reader loads it (core/thread_hold.h) */
    t->depth++;
    if (__builtin_expect(g->tuning_entry, 0)) { /* a tuner's warmup: tuning from here */
        TG_OWN_SET(t->tuning, t->tuning + 1);
        if (t->tuning == 1) {
            tg_tuning_seen();
            tg_tuner_mark_evidence(t, TG_EV_TUNING);
        }
    }
    if (__builtin_expect(tg_trace_on, 0)) { /* trace=1: the session's slice */
        char k_[128];
        t->busy++;
        tg_py_kernel_name(inst, k_, sizeof k_);
        t->busy--;
        tg_trace_session_begin(t, g->method, k_, (uintptr_t)inst);
    }

    const unsigned forks = tg__gthread(t)->forks; /* hot path: a load and a compare on the guard's first line */
    PyObject *res = tg__call_orig(g, f, args, nargs, kwnames);
    if (__builtin_expect(tg__gthread(t)->forks != forks, 0)) {
        /* fork() inside the call, and this is the child: the tables, the
         * turn and t's holds were reset at fork (nothing of the parent's is
         * held here), so this frame has nothing to give back; only its own
         * count of tuning frames, which the fork kept. */
        if (g->tuning_entry)
            TG_OWN_SET(t->tuning, t->tuning - 1);
        return res;
    }
    if (__builtin_expect(g->replacement, 0) && t->nheld < nheld)
        return res; /* the program's wrapper: its session ended at the original's return (nested_call) */
    return session_exit(g, t, inst, u, o, epoch, res);
}

/* A guarded call made by the program's Python code run inside this
 * thread's own serialize wait (a signal handler, an audit hook): guarded as
 * a call of its own
 * (guard/serialize_wait.c, "a call made inside a wait"). */
static __attribute__((cold, noinline)) PyObject *call_in_wait(struct tg_guard *g, struct tg_thread *t, PyObject *f,
                                                              PyObject *const *args, Py_ssize_t nargs,
                                                              PyObject *kwnames)
{
    struct tg_wait_away w;
    tg__wait_away_begin(t, &w);
    PyObject *res = guard_call(g, t, f, args, nargs, kwnames);
    tg__wait_away_end(t, &w);
    return res;
}

/* The way into a registered session (a call that is not detect's
 * unregistered session): the turn, the verdict, the session.  Out of line:
 * the guarded call's fast path (guard_call, inlined in both entry points)
 * ends before it. */
static __attribute__((noinline)) PyObject *registered_call(struct tg_guard *g, struct tg_thread *t, PyObject *inst,
                                                           PyObject *f, PyObject *const *args, Py_ssize_t nargs,
                                                           PyObject *kwnames)
{
    struct tg_entry e = {0};
    enum tg_entry_end end = relook(&e, inst);
    /* A thread that has made no CUDA call yet (cold cache: the first tunings
     * compile before they launch) is known by its current device, taken at
     * each outermost entry (it may switch devices).  After the thread's first
     * recorded CUDA call this is one load; before it, an atomic load while
     * libcuda is not in use, else two driver calls (reads of the driver's
     * thread state), on outermost entries only. */
    if (end == TG_ENTRY_GO && __builtin_expect(t->nheld == 0 && t->last.kind == TG_CUDA_NONE, 0))
        TG_OWN_SET(t->entry_device, tg_cuda_current_device());
    if (end == TG_ENTRY_GO)
        end = take_turn(&e, g, t, inst);
    if (end == TG_ENTRY_GO)
        end = decide(&e, g, t, inst);
    if (end == TG_ENTRY_GO && __builtin_expect(t->kept_exc[0] != NULL, 0))
        end = TG_ENTRY_INTERRUPTED; /* our own Python code above met the program's signal handler */
    switch (end) {
    case TG_ENTRY_GO:
        return run_session(g, t, inst, &e, f, args, nargs, kwnames);
    case TG_ENTRY_NESTED:
        return nested_call(g, t, e.u, f, args, nargs, kwnames);
    case TG_ENTRY_FULL:
        return pass_through_full(g, t, f, args, nargs, kwnames);
    case TG_ENTRY_INTERRUPTED:
        return interrupted(&e, t, inst);
    }
    return NULL; /* not reached: every case returns */
}

/* t: the calling thread's record (tg__guard_entry's tg__self()); f: what
 * call_orig calls (the function, or a descriptor guard's original); args[0]
 * is self.  The fast path of every guarded call, inlined in both entry
 * points: in detect's steady state (a tuned call, nobody tuning) it calls
 * tg_tuner_find and tg__lazy_call and nothing else of tunerguard's; the
 * registered path, the program's wrappers and the tuning methods are out of
 * line. */
static inline __attribute__((always_inline)) PyObject *guard_call(struct tg_guard *g, struct tg_thread *t, PyObject *f,
                                                                  PyObject *const *args, Py_ssize_t nargs,
                                                                  PyObject *kwnames)
{
    if (__builtin_expect(nargs < 1 || t->busy || tg_opts.mode == TG_MODE_OFF, 0)) {
        if (tg__gthread(t)->wait_open && nargs >= 1 && tg_opts.mode == TG_MODE_SERIALIZE)
            return call_in_wait(g, t, f, args, nargs, kwnames); /* t->busy: its wait's */
        return tg__call_orig(g, f, args, nargs, kwnames);
    }
    if (__builtin_expect(g->family != NULL, 0) && !tg__guard_serves(g, args[0]))
        return tg__call_orig(g, f, args, nargs, kwnames); /* a mixin's function on another class's instance */
    if (__builtin_expect(__atomic_load_n(&g->chains, __ATOMIC_RELAXED), 0))
        return tg__wrapper_call(g, t, f, args, nargs, kwnames);
    if (g->marker)
        return marker_call(g, t, f, args, nargs, kwnames);
    if (__builtin_expect(__atomic_load_n(&tg_arm_pending, __ATOMIC_RELAXED), 0))
        tg_arm_process_pending();
    if (t->depth == 0) {
        t->busy++;
        tg__guard_check_replaced(g, t);
        t->busy--;
    }

    PyObject *inst = args[0];
    if (__builtin_expect(__atomic_load_n(&tg__lazy_evident, __ATOMIC_SEQ_CST) != 0, 0))
        tg__lazy_adopt((uintptr_t)inst, t); /* benchmarking sessions inside inst that nobody sees yet */
    const uintptr_t li = __atomic_load_n(&t->lazy_inst, __ATOMIC_RELAXED); /* an adopter may claim it */
    if (__builtin_expect(li != 0, 0)) {
        tg__lazy_register(t, li); /* a guarded call inside an unregistered session: the session registers first */
    } else if (tg__lazy_eligible(g, t)) {
        const struct tg_tuner *q = tg_tuner_find((uintptr_t)inst);
        if (!q || (TG_NOCC(q) == 0 && __atomic_load_n(&q->waiters, __ATOMIC_RELAXED) == 0)) {
            PyObject *res;
            uint32_t epoch;
            if (!tg__lazy_call(g, t, inst, f, args, nargs, kwnames, &res, &epoch))
                return res;
            /* Registered, during the call or just now: leave as a registered
             * session does, with the epoch read at entry. */
            struct tg_tuner *u = (struct tg_tuner *)t->held[0];
            struct tg_occupant *o = t->held_slot[0] != 0xff ? &u->occ[t->held_slot[0]] : NULL;
            return session_exit(g, t, inst, u, o, epoch, res);
        }
    }
    return registered_call(g, t, inst, f, args, nargs, kwnames);
}

/* The end of a registered session's outermost or nested level: the checks
 * at return, then the entry left.  epoch: tg__tuning_epoch when the session
 * began.  GIL held. */
static PyObject *session_exit(struct tg_guard *g, struct tg_thread *t, PyObject *inst, struct tg_tuner *u,
                              struct tg_occupant *o, uint32_t epoch, PyObject *res)
{
    /* Another thread inside: did this return run under its benchmarking?
     * Only a call that returned (an exception may leave before the tuner's
     * own `self.nargs = None`), and, for a marked tuner, only when some
     * thread began tuning during the call: overlapping tuned calls, the
     * common case with several threads, look at nobody else's record.  A
     * session without a slot (more threads inside than the entry has slots)
     * is checked too when it is the thread's only one: its return clears
     * the arguments as any other's does.  And whatever the epoch while
     * sessions without a slot are inside: one may have been benchmarking
     * since before this call entered, unseen by its entry (which looks at
     * the slots' evidence). */
    if (__builtin_expect(TG_NOCC(u) > 1, 0) && g->clears_args && (o ? o->depth == 1 : t->nheld == 1) && res != NULL &&
        (!g->marked || tg_tuner_overflow(u) > 0 || __atomic_load_n(&tg__tuning_epoch, __ATOMIC_RELAXED) != epoch))
        tg__check_race_at_exit(u, inst, g, t, o);
    if (__builtin_expect(res == NULL, 0) && o && tg__link_peek(o) && o->depth == 1)
        tg__report_exception(inst, g, t, u, o, tg__guard_at); /* the link read there, under the lock */
    if (__builtin_expect(!o && tg__gthread(t)->ovf_inst == (uintptr_t)inst, 0)) { /* a session without a slot */
        if (res == NULL && tg__gthread(t)->ovf_raced_tid) {
            struct tg_occupant link = {.tid = t->tid, .depth = 1, .raced_tid = tg__gthread(t)->ovf_raced_tid,
                                       .race_seq = tg__gthread(t)->ovf_race_seq};
            memcpy(link.raced_name, tg__gthread(t)->ovf_raced_name, sizeof link.raced_name);
            tg__report_exception(inst, g, t, NULL, &link, tg__guard_at);
        }
        tg__gthread(t)->ovf_raced_tid = 0;
        tg__gthread(t)->ovf_inst = 0;
        tg__slotless_leave(t);
    }
    if (__builtin_expect(g->tuning_entry, 0)) /* written only when it changes (core/thread_state.h) */
        TG_OWN_SET(t->tuning, t->tuning - 1);
    t->depth--;
    __atomic_store_n(&t->nheld, t->nheld - 1, __ATOMIC_RELAXED); /* a stack reader loads it (core/thread_hold.h) */
    /* Out of the slot, then the lock (serialize): the waiter the unlock wakes
     * must not find this call still inside.  Without the GIL it runs at once,
     * and would see this thread's benchmarking evidence as a race at its own
     * return.  The entry stays ours meanwhile: one with its lock held is not
     * idle, so never given back (detectors/tuner_table.c `idle`). */
    tg_tuner_leave_at(u, t, o);
    tg__unlock_tuner(u, t);
    if (t->nheld == 0)
        tg__release_turn(t); /* no-op unless this thread holds the turn */
    if (t->nheld == 0) {
        tg_hold_session_end(t); /* a reader of its stack done before this thread can end */
        tg_tuning_session_end(t, inst); /* cuda/cuda_stress.h */
        tg__lazy_clear(t); /* an adopted session's published evidence */
    }
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_session_end(t);
    return res;
}
