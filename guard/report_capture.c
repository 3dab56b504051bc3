/* The reports a guarded call can find, filled for reports/emit.h: a race
 * (at entry, at a declared tuner's tuning step, at a benchmark whose
 * arguments are gone, at a return that clears them), an exception linked
 * to a race, a deadlock, a wait timeout, a holder that died, a replaced
 * method.  Whether there is a race to report is decided in
 * guard/race_decide.c, which calls the tg__capture_* builders here under
 * the report lock; the threads are shown as guard/thread_view.c reads them.
 * The lock, the de-duplication and the writing are reports/emit.c's.
 *
 * Everything here: GIL held, allocates (Python objects, names, frames), off
 * the hot path: reached only when a call found another thread inside, a wait,
 * an exception in a raced session, or a replaced method. */
#include "guard/guard_internal.h"
#include "core/clock.h"
#include "core/options.h"
#include "core/py_attr.h"
#include "core/thread_state.h"
#include "reports/emit.h"
#include "reports/py_stack.h"
#include "reports/report.h"
#include "cuda/cuda_hooks.h"
#include "cuda/cuda_stress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The common head of every report about tuner inst (r was zeroed by
 * tg_report_begin).  Runs Python code (attribute look-ups): other threads
 * may run. */
static void begin_report(struct tg_report *r, enum tg_report_kind kind, PyObject *inst, const struct tg_guard *g)
{
    tg_report_head(r, kind);
    r->instance = (uintptr_t)inst;
    if (inst) {
        tg_py_class_name(inst, r->tuner_class, sizeof r->tuner_class);
        tg_py_kernel_name(inst, r->kernel, sizeof r->kernel);
    }
    snprintf(r->method, sizeof r->method, "%s", g ? g->method : "?");
    r->declared = g && g->declared;
}

uint64_t tg__capture_race(struct tg_report *r, PyObject *inst, const struct tg_guard *g, struct tg_thread *t,
                          struct tg_tuner *u, const struct tg_occupant *other, int high, int other_tuning,
                          int serialized, int without_gil, struct tg_race_link *link, enum tg_emit_status *st)
{
    const struct tg_guard *at_step = (const struct tg_guard *)tg__gthread(t)->step_entry;
    struct tg_thread_view *e = &r->entering, *in = &r->inside;
    /* C-only captures first, while the other thread is certainly inside. */
    tg__view_other(in, other);
    tg__view_self(e, t, at_step ? "at its tuning step" : "at entry", 1);
    if (high < 0)
        high = in->benchmarking;
    char step[sizeof r->step] = "";
    const void *ts_step; /* the other thread's, written by it (relaxed) */
    if (at_step)
        snprintf(step, sizeof step, "%s", at_step->method);
    else if (g->declared && other_tuning && __atomic_load_n(&other->thread->tuning, __ATOMIC_RELAXED) > 0 &&
             (ts_step = __atomic_load_n(&other->thread->tuning_step, __ATOMIC_RELAXED)) != NULL)
        snprintf(step, sizeof step, "%s", ((const struct tg_guard *)ts_step)->method);
    if (high && !serialized) {
        /* Both sessions now overlap: either may end in the exception.  Not
         * when this thread is about to wait (serialize): the two calls will
         * not overlap, and an exception of either is the program's own. */
        tg__link_session(u, other, t->tid, NULL, 0); /* its name and seq: after the report; other is a copy */
        link->tid = other->tid;
    }
    other = NULL; /* from here on, Python code runs */
    begin_report(r, TG_REPORT_RACE, inst, g);
    memcpy(r->step, step, sizeof step);
    r->seen_at_step = at_step != NULL;
    r->serialized = serialized;
    r->without_gil = without_gil;
    e->entered_ns = r->ts_ns;
    tg__view_names(e);
    tg__view_names(in);
    r->high_severity = high;
    snprintf(link->name, sizeof link->name, "%s", in->name);
    return tg_emit(r, st); /* halt_on_race ends the process here */
}

uint64_t tg__capture_cleared_at_tuning(struct tg_report *r, PyObject *inst, const struct tg_guard *g,
                                       struct tg_thread *t, struct tg_tuner *u, struct tg_occupant *mine,
                                       enum tg_emit_status *st)
{
    struct tg_thread_view *e = &r->entering;
    tg__view_self(e, t, "at its tuning step", 1);
    e->entered_ns = tg_ticks_to_ns(mine->entered_ns);
    tg__link_set(u, mine, t->tid, "", 0, 1); /* linked: its exception names this race */
    mine = NULL; /* from here on, Python code runs */
    begin_report(r, TG_REPORT_RACE, inst, g);
    r->high_severity = 1;
    r->seen_at_tuning = 1;
    r->without_gil = g->clears_args && tg__others_run(); /* a builtin's call, no Python code */
    tg__view_names(e);
    return tg_emit(r, st); /* halt_on_race ends the process here */
}

uint64_t tg__capture_race_at_exit(struct tg_report *r, PyObject *inst, const struct tg_guard *g,
                                  struct tg_thread *t, struct tg_thread_view *xv, const struct tg_occupant *x,
                                  uint64_t t_entered, const char *t_name, enum tg_emit_status *st)
{
    struct tg_thread_view *e = &r->entering, *in = &r->inside;
    if (xv) {
        memcpy(e, xv, sizeof *e);
        free(xv);
    } else {
        tg__view_other(e, x); /* C calls only: x is still inside */
        x = NULL;
    }
    tg__view_self(in, t, "at return", 1);
    in->entered_ns = t_entered ? tg_ticks_to_ns(t_entered) : 0; /* 0: not known */
    in->launches = t->session_launches;
    in->syncs = t->session_syncs;
    in->benchmarking = t->session_syncs > 0 || t->session_launches > 1;
    /* from here on, Python code runs */
    begin_report(r, TG_REPORT_RACE, inst, g);
    r->high_severity = 1;
    r->seen_at_exit = 1;
    r->without_gil = g->clears_args && tg__others_run(); /* a builtin's call, no Python code */
    if (!e->name[0])
        tg_py_thread_name(e->ident, e->name, sizeof e->name);
    if (e->has_cuda)
        tg_cuda_kernel_name(e->cuda.func, e->cuda_kernel, sizeof e->cuda_kernel);
    memcpy(in->name, t_name, sizeof in->name);
    if (in->has_cuda)
        tg_cuda_kernel_name(in->cuda.func, in->cuda_kernel, sizeof in->cuda_kernel);
    tg_stress_wake(); /* stress=1: the race showed; end the holds (cuda/cuda_stress.h) */
    return tg_emit(r, st); /* halt_on_race ends the process here */
}

/* A guarded call whose session raced ended in an exception the race can have
 * caused (tg__exception_from_race): say so, in the report and (3.11+) as a
 * note on the exception itself, so the traceback on the user's screen points
 * at the race.  The exception stays set. */
void tg__report_exception(PyObject *inst, struct tg_guard *g, struct tg_thread *t, struct tg_tuner *u,
                          const struct tg_occupant *o, const struct tg_guard *(*guard_at)(int i))
{
    PyObject *type, *value, *tb;
    tg_py.PyErr_Fetch(&type, &value, &tb);
    if (!type)
        return;
    tg_py.PyErr_NormalizeException(&type, &value, &tb);
    if (!tg__exception_from_race(g, type, tb, guard_at)) { /* the program's own, or an interrupt */
        tg_py.PyErr_Restore(type, value, tb);
        return;
    }
    struct tg_report *r = tg_report_begin(t); /* may let the race's thread finish its report */
    struct tg_occupant link = {.tid = t->tid, .depth = 1};
    if (u) { /* t's own slot: read now, whole, so the race's seq is in it */
        link.raced_tid = tg__link_read(u, o, link.raced_name, sizeof link.raced_name, &link.race_seq);
        o = &link;
    }
    if (!o->raced_tid) { /* unlinked meanwhile: the race was suppressed */
        tg_report_end(t);
        tg_py.PyErr_Restore(type, value, tb);
        return;
    }
    begin_report(r, TG_REPORT_EXCEPTION, inst, g);
    r->race_seq = o->race_seq;
    tg_py_attr_str(type, "__name__", r->exc_type, sizeof r->exc_type);
    PyObject *msg = value ? tg_py.PyObject_Str(value) : NULL;
    const char *m = msg ? tg_py.PyUnicode_AsUTF8(msg) : NULL;
    snprintf(r->exc_msg, sizeof r->exc_msg, "%s", m ? m : "");
    if (msg)
        tg_py.Py_DecRef(msg);
    tg_py_drop_error();

    struct tg_thread_view *e = &r->entering;
    e->tid = t->tid;
    e->ident = t->ident;
    tg_py_thread_name(t->ident, e->name, sizeof e->name);
    tg__view_traceback(e, tb);
    if (o->raced_tid != t->tid) { /* == t's own: tg__check_cleared_at_tuning, the other call is not known */
        r->inside.tid = o->raced_tid;
        snprintf(r->inside.name, sizeof r->inside.name, "%s", o->raced_name);
    }
    enum tg_emit_status st;
    tg_emit(r, &st);
    if (st != TG_EMIT_SUPPRESSED && tg_py.minor >= 11 && value) {
        /* PEP 678: the note is printed under the traceback. */
        char note[512];
        tg_report_exception_note(r, tg_sink_text_path(), note, sizeof note);
        PyObject *res = tg_py.PyObject_CallMethod(value, "add_note", "s", note);
        if (res)
            tg_py.Py_DecRef(res);
        tg_py_drop_error();
    }
    tg_report_end(t);
    tg_py.PyErr_Restore(type, value, tb);
}


/* A kernel name for a tuner table entry (its key is the instance). */
static void tuner_kernel(const struct tg_tuner *u, char *buf, size_t len)
{
    tg_py_kernel_name((PyObject *)u->key, buf, len);
}

/* serialize: thread t waiting for u would close a cycle of waits (path[0] is
 * u).  Report it with the stacks of t and of u's holder; the policy decides.
 * Returns 1 if t should proceed unserialized. */
int tg__report_deadlock(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                        struct tg_tuner **path, int n)
{
    struct tg_report *r = tg_report_begin(t);
    /* Waiting for the lock may have let threads run: is the cycle still there?
     * Once it is, it stays: every other thread on it is blocked in a wait. */
    n = tg_tuner_wait_cycle(u, t, path, 16);
    if (n == 0) {
        tg_report_end(t);
        return 0;
    }
    struct tg_occupant hc;
    const struct tg_occupant *h = tg_tuner_other(u, t, &hc);
    if (h)
        tg__view_other(&r->inside, h);
    tg__view_self(&r->entering, t, "waiting", 0);
    tg__view_names(&r->entering);
    tg__view_names(&r->inside);
    begin_report(r, TG_REPORT_DEADLOCK, inst, g);
    /* The cycle: each tuner's holder waits for the next; the last is held by t. */
    for (int k = 0; k < n && k < TG_CYCLE_MAX; k++) {
        const struct tg_occupant *o = tg_tuner_other(path[k], NULL, &hc);
        r->deadlock.cycle[k].holder = o ? o->tid : 0;
        tuner_kernel(path[k], r->deadlock.cycle[k].kernel, sizeof r->deadlock.cycle[k].kernel);
        r->deadlock.n = k + 1;
    }
    r->deadlock.abort = tg_opts.deadlock == TG_DEADLOCK_ABORT;
    tg_emit(r, NULL); /* deadlock=abort ends the process here */
    tg_report_end(t);
    return 1;
}

void tg__report_holders_died(struct tg_thread *t, PyObject *inst, const struct tg_guard *g, const pid_t *dead,
                             const unsigned long *ident, int n)
{
    for (int i = 0; i < n; i++) {
        struct tg_report *r = tg_report_begin(t);
        tg__view_self(&r->entering, t, "entering", 0);
        tg__view_names(&r->entering);
        r->inside.tid = dead[i];
        r->inside.ident = ident[i];
        tg_py_thread_name(ident[i], r->inside.name, sizeof r->inside.name);
        begin_report(r, TG_REPORT_HOLDER_DIED, inst, g);
        tg_emit(r, NULL);
        tg_report_end(t);
    }
}

/* serialize: the wait has lasted wait_timeout seconds.  GIL held. */
void tg__report_wait_timeout(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                             uint64_t waited_ns, uint64_t stalled_ns)
{
    struct tg_report *r = tg_report_begin(t);
    struct tg_occupant hc;
    const struct tg_occupant *h = tg_tuner_other(u, t, &hc); /* after the lock: it may have left */
    if (!h) {
        tg_report_end(t);
        return;
    }
    tg__view_other(&r->inside, h);
    tg__view_self(&r->entering, t, "waiting", 0);
    tg__view_names(&r->entering);
    tg__view_names(&r->inside);
    begin_report(r, TG_REPORT_WAIT_TIMEOUT, inst, g);
    r->wait.waited_ns = waited_ns;
    r->wait.stalled_ns = stalled_ns;
    r->wait.timeout_s = tg_opts.wait_timeout;
    r->wait.on_timeout_proceed = tg_opts.on_wait_timeout == TG_WAIT_END_PROCEED;
    tg_emit(r, NULL);
    tg_report_end(t);
}

/* verbosity>=1: a method_replaced report for guard g, whose class
 * attribute is now `qual` defined at file:line (NULLs: unknown), found by
 * the calling thread at its call.  GIL held; the caller is busy. */
void tg__report_replaced(struct tg_guard *g, const char *qual, const char *file, const char *line)
{
    struct tg_thread *t = tg__self();
    struct tg_report *r = tg_report_begin(t);
    begin_report(r, TG_REPORT_METHOD_REPLACED, NULL, g);
    snprintf(r->tuner_class, sizeof r->tuner_class, "%s", g->cls_name);
    snprintf(r->replaced.qualname, sizeof r->replaced.qualname, "%s", qual ? qual : "");
    snprintf(r->replaced.file, sizeof r->replaced.file, "%s", file ? file : "");
    r->replaced.line = file && line ? atoi(line) : 0;
    tg__view_self(&r->entering, t, "at the call", 0);
    tg__view_names(&r->entering);
    tg_emit(r, NULL);
    tg_report_end(t);
}
