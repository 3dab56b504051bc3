/* Race decisions of the guarded calls: is the thread inside tuning, is an
 * overlap a race, at entry, at a declared tuner's tuning step, at a
 * benchmark whose arguments are gone, at a return that clears them; and
 * which sessions a race links, for the exception report.  What a report
 * shows is filled in guard/report_capture.c (the capture_* builders), the
 * threads by guard/thread_view.c.
 *
 * The pattern of each decision: C loads first (cheap to rule out, the
 * common case); the report lock (tg_report_begin), which can let other
 * threads run, so the occupants are looked up again; the builder, which
 * reads the occupants with C calls only before any Python code runs; the
 * links made after the emit, on the occupants looked up once more.
 *
 * Everything here: GIL held. */
#include "guard/guard_internal.h"
#include "core/builtin_tuners.h"
#include "core/options.h"
#include "core/py_attr.h"
#include "core/py_ref.h"
#include "cuda/cuda_stress.h"
#include "reports/emit.h"
#include "reports/py_stack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The occupant of u that is thread tid (in the session entered at
 * `entered`, ticks, unless 0), or NULL (it left meanwhile): looked up under
 * u's entry lock, which its slot's owner enters and leaves under. */
static struct tg_occupant *occupant_in(struct tg_tuner *u, pid_t tid, uint64_t entered)
{
    struct tg_occupant *found = NULL;
    tg_tuner_entry_lock(u);
    for (int i = 0; i < TG_TUNER_MAX_OCC && !found; i++)
        if (u->occ_tid[i] == tid && u->occ[i].thread && (!entered || u->occ[i].entered_ns == entered))
            found = &u->occ[i];
    tg_tuner_entry_unlock(u);
    return found;
}

static struct tg_occupant *occupant_by_tid(struct tg_tuner *u, pid_t tid)
{
    return occupant_in(u, tid, 0);
}

/* The occupant of u that is thread tid in the session it entered at
 * entered (ticks): NULL when it left, or left and came back. */
static struct tg_occupant *same_session(struct tg_tuner *u, pid_t tid, uint64_t entered)
{
    return occupant_in(u, tid, entered);
}

/* A copy of u's occupant that is thread tid (in the session entered at
 * `entered`, ticks, unless 0), in *dst, taken under the entry lock: NULL
 * when it left.  Without the GIL a thread entering or leaving writes its
 * slot (tuner_table.c enter_locked, clear_occ) while a report or a scan
 * reads it, so those read the copy, never the slot (links:
 * tg__link_session); its record (thread) is valid while that thread lives,
 * as with the GIL.  C calls. */
static struct tg_occupant *session_copy(struct tg_tuner *u, pid_t tid, uint64_t entered, struct tg_occupant *dst)
{
    struct tg_occupant *found = NULL;
    tg_tuner_entry_lock(u);
    for (int i = 0; i < TG_TUNER_MAX_OCC && !found; i++)
        if (tid != 0 && u->occ_tid[i] == tid && u->occ[i].thread && u->occ[i].tid == tid &&
            (!entered || u->occ[i].entered_ns == entered)) {
            *dst = u->occ[i];
            found = dst;
        }
    tg_tuner_entry_unlock(u);
    return found;
}

static struct tg_occupant *occupant_copy(struct tg_tuner *u, pid_t tid, struct tg_occupant *dst)
{
    return session_copy(u, tid, 0, dst);
}

/* A copy of the occupant in u's slot i (session_copy), found by the slots'
 * directory (occ_tid, read whole without the lock): NULL when the slot is
 * free, is thread t's own, or was left meanwhile. */
static struct tg_occupant *slot_copy(struct tg_tuner *u, int i, const struct tg_thread *t, struct tg_occupant *dst)
{
    const pid_t tid = __atomic_load_n(&u->occ_tid[i], __ATOMIC_RELAXED);
    if (tid == 0 || tid == t->tid || !occupant_copy(u, tid, dst) || dst->thread == t)
        return NULL;
    return dst;
}

/* A session without an occupant slot (guard/slotless.c) as an occupant, in
 * *tmp, for the scans and views made of occupants: NULL when it left.  Its
 * link is its thread's (ovf_raced_tid).  C calls only. */
static struct tg_occupant *slotless_session(struct tg_tuner *u, pid_t tid, uint64_t entered, struct tg_occupant *tmp)
{
    struct tg_slotless s;
    if (!tg__slotless_find(u->key, tid, entered, &s) || !tg__tid_alive_cached(tid))
        return NULL;
    memset(tmp, 0, sizeof *tmp);
    tmp->thread = s.t;
    tmp->tid = tid;
    tmp->ident = s.t->ident;
    tmp->tstate = s.tstate;
    tmp->depth = 1;
    tmp->entered_ns = entered;
    tmp->raced_tid = tg__gthread(s.t)->ovf_raced_tid;
    return tmp;
}

/* Is the thread inside tuning (not on the fast path of an already tuned key)?
 * Inside a marked tuning method (t->tuning, guard/tuning_marks.c) it is.  Its
 * CUDA record says so once it synchronized or launched twice in the
 * session.  For a tuner whose tuning methods are marked that is all (one
 * load each; called for an occupant whose evidence bit is set, see
 * tg__report_race).  For others
 * (targets=), before that (pruning, compiling) its Python frames do: walk them
 * from the innermost out to the guarded method's own frame, looking for a
 * tuning function.  Only names are read; a few frames on the fast path.
 * Not on a free-threaded build, where that thread runs meanwhile: there the
 * marker counts and the CUDA evidence decide alone.
 * count_launches 0: launches are no evidence (a fast path whose config
 * pre_hook launches a kernel, zero_(), launches twice without tuning).
 * GIL held; the other thread is blocked with the GIL released. */
int tg__other_is_tuning(const struct tg_occupant *o, const struct tg_guard *g, int count_launches)
{
    const struct tg_thread *ot = o->thread;
    if (g->declared && g->marked)
        return __atomic_load_n(&ot->tuning, __ATOMIC_RELAXED) > 0; /* a declared tuner's named step: inside it now, nothing else counts */
    if (tg_thread_tuning(ot) || (count_launches && __atomic_load_n(&ot->session_multi, __ATOMIC_RELAXED)))
        return 1;
    if (g->marked || g->declared)
        return 0; /* its tuning methods would have said so, or a declared tuner's names are its own: no frame walk */
    if (tg__others_run())
        return 0; /* it runs meanwhile: its frames are not walked; the counts above are the evidence */
    /* The walk (reports/py_stack.h) keeps the code objects; their names are
     * read after it. */
    PyObject *codes[64];
    int n = 0;
    void *ts = tg__occupant_tstate(o);
    struct tg_py_walk walk;
    for (PyFrameObject *f = ts ? tg_py_walk_begin(&walk, ts) : NULL; f && n < 64; f = tg_py_walk_next(&walk)) {
        PyObject *code = tg_py.PyFrame_GetCode(f);
        if (code && code == g->orig_code) {
            tg_py.Py_DecRef(code); /* alive: its frame holds it */
            break; /* the guarded call itself: what is outside is the caller's */
        }
        if (code)
            codes[n++] = code;
    }
    if (ts)
        tg_py_walk_end(&walk);
    int found = 0;
    for (int i = 0; i < n; i++) {
        PyObject *name = found ? NULL : tg_py.PyObject_GetAttrString(codes[i], "co_name");
        const char *s = name ? tg_py.PyUnicode_AsUTF8(name) : NULL;
        found = found || tg_tuning_frame(s); /* core/builtin_tuners.inc */
        if (name)
            tg_py.Py_DecRef(name);
        tg_py.Py_DecRef(codes[i]);
    }
    tg_py_drop_error();
    return found;
}

/* The thread inside u to report when t enters: one that is benchmarking, if
 * any is (with three threads inside, the first one found may be on a fast
 * path while another benchmarks).  u's first line, which this entry reads
 * anyway, says where to look (detectors/tuner_table.h, occ_ev): an
 * occupant's bits are set whenever its session shows evidence and stay
 * until it leaves, so no bit is a fast path and its record is not read (the
 * common case); a bit is checked against the record, which is the truth (a
 * warmup's tuning is over once it returns; a session nested deeper than
 * held[] has only TG_EV_UNTRACKED).  A tuner whose tuning methods are not
 * marked walks every occupant's frames.  t is not inside u (an entry), or
 * is but is skipped: every bit is another occupant's, and with none set a
 * marked tuner's overlap is decided by one load.  C calls only for a marked
 * tuner.  The occupant found is copied into *copy (occupant_copy) and the
 * copy returned.  NULL: none is tuning. */
static const struct tg_occupant *tuning_occupant(struct tg_tuner *u, const struct tg_guard *g,
                                                 const struct tg_thread *t, struct tg_occupant *copy)
{
    const int any_bit = __atomic_load_n(&u->occ_ev_all, __ATOMIC_RELAXED) != 0;
    for (int i = 0; (any_bit || !g->marked) && i < TG_TUNER_MAX_OCC; i++) {
        const pid_t tid = __atomic_load_n(&u->occ_tid[i], __ATOMIC_RELAXED);
        if (tid != 0 && tid != t->tid && (!g->marked || __atomic_load_n(&u->occ_ev[i], __ATOMIC_RELAXED) != 0) &&
            occupant_copy(u, tid, copy) && tg__other_is_tuning(copy, g, 1))
            return copy;
    }
    return NULL;
}

/* The sessions a race linked besides the one it reports (a race at exit:
 * every benchmarking one; at entry: the others benchmarking): found again
 * after the report by thread and entry time (the slot may be another
 * session's by then).  link_cleared, relink_cleared: below. */
struct exit_links {
    int n;
    pid_t tid[TG_TUNER_MAX_OCC];
    uint64_t entered[TG_TUNER_MAX_OCC];
    int ns; /* and sessions without a slot (guard/slotless.c), the first 16 */
    pid_t stid[16];
    uint64_t sentered[16];
};
static void link_cleared(struct tg_tuner *u, const struct tg_guard *g, const struct tg_thread *t,
                         struct exit_links *ln);
static void relink_cleared(struct tg_tuner *u, const struct tg_thread *t, const struct exit_links *ln,
                           int suppressed, const char *name, uint64_t seq);

/* Thread t enters u while `other` is inside.  Fills and emits the report
 * (unless it is a repeat, suppressed, or a low-severity overlap at
 * verbosity 0) and, for a high-severity race, marks the other occupant and
 * fills *link for t's own occupant.  GIL held; other is valid on entry only:
 * the report lock and the name look-ups can let other threads run, and
 * without the GIL it may leave at any time, so what is read of it is a copy
 * (occupant_copy), taken again after the report lock. */
void tg__report_race(struct tg_tuner *u, PyObject *inst, struct tg_guard *g, struct tg_thread *t,
                     const struct tg_occupant *other, int serialized, struct tg_race_link *link)
{
    memset(link, 0, sizeof *link);
    struct tg_occupant oc, tc;
    other = occupant_copy(u, __atomic_load_n(&other->tid, __ATOMIC_RELAXED), &oc);
    const struct tg_occupant *tuning = tuning_occupant(u, g, t, &tc);
    if (tuning)
        other = tuning;
    if (!other)
        return; /* it left before it could be read: no overlap any more */
    /* Without the GIL (a free-threaded build with it off) the two calls run
     * at once.  A tuner that keeps its call's arguments on itself (Triton's
     * Autotuner: run() sets self.nargs on every call, tuned key or not,
     * reads it for the key, the pre_hook and the launch, and ends with
     * self.nargs = None) then has them cleared or replaced under either
     * call: every overlap not prevented is a race, benchmarking or not.
     * The GIL's state as last seen (guard/gil_state.h: one load), asked
     * again below before a capture: a loop of overlaps makes no call. */
    int others_run = !serialized && g->clears_args ? tg_py.free_threaded && !tg__gil_on() : -1;
    int without_gil = others_run == 1;
    /* At a declared tuner's tuning step (tg__check_race_at_step) t is
     * inside u already and is the one in the step: every overlap is a race. */
    const struct tg_guard *at_step = (const struct tg_guard *)tg__gthread(t)->step_entry;
    /* A declared tuner's race: every overlap, or one in its tuning step.  The
     * same race seen before is counted without its capture (race_again.c),
     * as is an overlap without the GIL, which a loop meets on every call. */
    const int declared_race = g->declared && (tuning != NULL || !g->marked || at_step);
    uint64_t again_key = declared_race || without_gil
                                   ? tg__race_key(inst, at_step ? at_step : g, t, other, serialized, others_run)
                                   : 0;
    if (again_key && tg__race_again(again_key, t, u, other, serialized, link))
        return;
    if (without_gil && !tg__others_run()) { /* asked again: an import turned the GIL on meanwhile */
        others_run = 0;
        without_gil = 0;
        if (!declared_race)
            again_key = 0;
    }
    /* A low-severity overlap (fast path of a tuned key) is only counted at
     * verbosity 0: decided before paying for stacks and names, since two
     * threads calling one tuned kernel overlap on every other call. */
    if (tg_opts.verbosity < 1 && !tuning && !declared_race && !without_gil) {
        tg_tuner_add_overlap(u); /* on u's first line, which this entry writes anyway (tg_tuner_overlaps) */
        return;
    }
    pid_t other_tid = other->tid;
    struct tg_report *r = tg_report_begin(t); /* may let other threads run: look other up again */
    other = occupant_copy(u, other_tid, &oc);
    /* The benchmarking one left while we waited: another still benchmarking
     * is the race now (t's call writes and clears what it reads next), and
     * without it reported and linked here its exception would be linked
     * only by a check at t's return, which a return made while nobody
     * begins tuning does not make. */
    if (!other && tuning)
        other = tuning = tuning_occupant(u, g, t, &tc);
    if (!other) {
        tg_report_end(t); /* it left while we waited: no overlap any more */
        return;
    }
    /* A declared tuner (targets=): every overlap is a race, unless its
     * tuning step is named (marked): then while a thread inside is in it.
     * Without the GIL, every overlap of a tuner keeping its arguments. */
    const int high = declared_race || without_gil ? 1 : g->declared ? 0 : -1;
    enum tg_emit_status st;
    uint64_t seq = tg__capture_race(r, inst, g, t, u, other, high, tuning != NULL, serialized, without_gil, link,
                                    &st);
    if (again_key && (st == TG_EMIT_WRITTEN || st == TG_EMIT_REPEAT || st == TG_EMIT_SUPPRESSED))
        tg__race_remember(again_key, serialized, st == TG_EMIT_SUPPRESSED ? 0 : r->dedup_ref,
                          st == TG_EMIT_SUPPRESSED ? (int)r->supp_ref : 0, r->entering.name, r->inside.name);
    if (st == TG_EMIT_SUPPRESSED) { /* suppressions=: neither reported nor counted, nor linked */
        struct tg_occupant *mo = link->tid ? occupant_by_tid(u, link->tid) : NULL;
        if (mo) /* marked by the capture: its exception must not name this race */
            tg__link_update(u, mo, t->tid, 0, NULL, 0);
        link->tid = 0;
    }
    link->seq = r->high_severity ? seq : 0;
    if (link->tid) {
        /* The other occupant's link, if it is still inside. */
        struct tg_occupant *mo = occupant_by_tid(u, link->tid);
        if (mo) /* still this race's (not relinked by another thread's meanwhile) */
            tg__link_update(u, mo, t->tid, t->tid, r->entering.name, link->seq);
    }
    /* A tuner whose calls keep their arguments on it (Triton's Autotuner):
     * t's call writes them and its return clears them under every session
     * benchmarking now, not only the one reported.  Those not linked yet are
     * linked to this race (t's call has not begun: nothing of it was read
     * yet): a return made while nobody begins tuning makes no check
     * (session_exit), and their TypeError would go unlinked. */
    if (link->tid && g->clears_args) {
        struct exit_links more;
        link_cleared(u, g, t, &more);
        relink_cleared(u, t, &more, 0, r->entering.name, link->seq);
    }
    tg_report_end(t);
}

/* Thread t, inside u in a call of a declared tuner, is entering step (its
 * tuning step, tuning=) while another thread's call is inside u and has
 * yet to run its own step (or is in it): a race, as an entry while a
 * thread inside is in the step is.  Two threads that enter the tuner's
 * entry point at once, both before their steps, overlap first where
 * neither is in the step; this is where it becomes one: what t's call puts
 * on the shared tuner is what the other's step reads next.  A call whose
 * step has run and returned is not counted (it may be done with the state;
 * between two configs it is as likely, and an entry then is not counted
 * either).  Not again when t's session is linked to a race already
 * (reported at its entry, or at the other thread's step).  Reported with t
 * as the entering thread, its session linked.  GIL held. */
void tg__check_race_at_step(PyObject *inst, const struct tg_guard *step, struct tg_thread *t)
{
    struct tg_tuner *u = tg_tuner_find((uintptr_t)inst);
    struct tg_occupant *mine = u ? occupant_by_tid(u, t->tid) : NULL;
    if (!mine || mine->thread != t)
        return;
    tg_tuner_entry_lock(u); /* others copy the slot under the lock */
    mine->stepped = 1; /* its step has run: a later step of another call does not count it */
    tg_tuner_entry_unlock(u);
    if (TG_NOCC(u) < 2 || tg__link_peek(mine) != 0 || !mine->method)
        return;
    struct tg_guard *g = (struct tg_guard *)mine->method; /* the session's: Tuner.run */
    if (!g->declared)
        return;
    const struct tg_occupant *other = NULL;
    struct tg_occupant c;
    for (int i = 0; i < TG_TUNER_MAX_OCC && !other; i++) {
        const pid_t tid = __atomic_load_n(&u->occ_tid[i], __ATOMIC_RELAXED);
        if (tid != 0 && tid != t->tid && occupant_copy(u, tid, &c) && tg__tid_alive_cached(c.tid) &&
            (__atomic_load_n(&c.thread->tuning, __ATOMIC_RELAXED) > 0 || !c.stepped))
            other = &c;
    }
    if (!other)
        return;
    struct tg_race_link link;
    tg__gthread(t)->step_entry = step;
    tg__report_race(u, inst, g, t, other, 0, &link);
    tg__gthread(t)->step_entry = NULL;
    tg_stress_wake(); /* stress=1: the race showed; end the holds */
    mine = occupant_by_tid(u, t->tid); /* the report may have let others run */
    if (link.tid && mine && mine->thread == t) /* unless another thread's race linked it meanwhile */
        tg__link_set(u, mine, link.tid, link.name, link.seq, 0);
}

/* inst.nargs is None right now: what t's return left (C calls only).  When
 * it is not, another thread set it after t cleared it (t let the GIL go
 * between its `self.nargs = None` and its return), and nothing was lost. */
static int nargs_cleared(PyObject *inst)
{
    PyObject *dict = tg_py.PyObject_GetAttrString(inst, "__dict__");
    PyObject *v = tg_py_dict_get_str(dict, "nargs");
    int cleared = v == tg_py.none;
    if (v)
        tg_py.Py_DecRef(v);
    if (dict)
        tg_py.Py_DecRef(dict);
    tg_py_drop_error();
    return cleared;
}

/* Thread t enters a benchmark (Autotuner._bench, which reads self.nargs at
 * once) in a session of a tuner whose run() keeps its arguments on the
 * shared object (Triton's Autotuner), and no race is linked to it yet.
 * Its run() set self.nargs before it got here; None now is the return of
 * another call on this tuner made meanwhile (one that entered and left
 * while t computed its key, unseen by the checks at entry and return:
 * nobody was tuning then), and the benchmark raises the TypeError next.
 * Only at _bench: prune_configs may come before a run() override sets
 * self.nargs, and a program that works must not be told of a race.
 * Reported with t alone (the other call is gone), high, seen at "tuning",
 * and t's session linked to it (raced_tid = t's own tid: the other thread
 * is not known).  detect; GIL held; one dictionary look-up. */
void tg__check_cleared_at_tuning(PyObject *inst, struct tg_thread *t)
{
    struct tg_tuner *u = tg_tuner_find((uintptr_t)inst);
    struct tg_occupant *mine = u ? occupant_by_tid(u, t->tid) : NULL;
    if (!mine || mine->thread != t || tg__link_peek(mine) != 0 || !mine->method)
        return;
    /* The session's method: Autotuner.run, or an override that calls it
     * (fla's CachedAutotuner.run: super().run() sets self.nargs first);
     * not warmup(), whose versions differ. */
    const struct tg_guard *g = (const struct tg_guard *)mine->method;
    if (!g->clears_args || g->declared || g->tuning_entry || !nargs_cleared(inst))
        return;
    uint64_t entered = mine->entered_ns;
    mine = NULL;
    struct tg_report *r = tg_report_begin(t); /* may let other threads run: looked up again */
    mine = same_session(u, t->tid, entered);
    if (!mine || tg__link_peek(mine)) {
        tg_report_end(t);
        return;
    }
    enum tg_emit_status st;
    uint64_t seq = tg__capture_cleared_at_tuning(r, inst, g, t, u, mine, &st);
    struct tg_occupant *back = same_session(u, t->tid, entered);
    if (back)
        tg__link_update(u, back, t->tid, st == TG_EMIT_SUPPRESSED ? 0 : t->tid, NULL, seq);
    tg_report_end(t);
}

/* t's return cleared the arguments every thread still benchmarking in u
 * reads next: link each that no race has linked yet to t's race, so its
 * exception is the race's (seeds/004 on an H200: nine threads' TypeErrors,
 * two of them otherwise without a note).  Done before the report lock is
 * taken: waiting for it lets other threads run, and one of them may raise
 * the TypeError and leave in that time (32 threads, a switch interval of
 * 1 us, the CPU model of Triton: 4 of about 1,800 TypeErrors left
 * unlinked).  A suppressed race unlinks them again after the report; one
 * that raised while the lock was awaited keeps its link.  The race's sequence
 * number and t's thread name are added after the report (relink_cleared).
 * GIL held; C loads only. */
static void link_cleared(struct tg_tuner *u, const struct tg_guard *g, const struct tg_thread *t,
                         struct exit_links *ln)
{
    ln->n = 0;
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        struct tg_occupant cc;
        const struct tg_occupant *c = slot_copy(u, i, t, &cc);
        if (!c || tg__link_peek(c) != 0 || !tg__tid_alive_cached(c->tid) || !tg__other_is_tuning(c, g, 0))
            continue;
        if (!tg__link_session_if(u, c, t->tid, "", 0, 0))
            continue; /* another thread's race linked it meanwhile, or it left */
        ln->tid[ln->n] = c->tid;
        ln->entered[ln->n++] = c->entered_ns;
    }
    /* Sessions without a slot read the same arguments: linked on their
     * threads' records. */
    ln->ns = 0;
    struct tg_slotless all[TG_SLOTLESS_MAX];
    const int nall = tg__slotless_all(u->key, all, TG_SLOTLESS_MAX);
    for (int k = 0; k < nall && ln->ns < (int)(sizeof ln->stid / sizeof ln->stid[0]); k++) {
        const struct tg_slotless *s = &all[k];
        struct tg_occupant tmp;
        const struct tg_occupant *c = s->t != t ? slotless_session(u, s->tid, s->entered, &tmp) : NULL;
        if (!c || tg__link_peek(c) != 0 || !tg__other_is_tuning(c, g, 0))
            continue;
        tg__gthread(s->t)->ovf_raced_tid = t->tid;
        tg__gthread(s->t)->ovf_raced_name[0] = '\0';
        tg__gthread(s->t)->ovf_race_seq = 0;
        ln->stid[ln->ns] = s->tid;
        ln->sentered[ln->ns++] = s->entered;
    }
}

/* After the report: the linked sessions still inside get its sequence number
 * and t's name, or, when it was suppressed, lose the link (their exceptions
 * are not reported).  One that left took the link it had.  GIL held. */
static void relink_cleared(struct tg_tuner *u, const struct tg_thread *t, const struct exit_links *ln,
                           int suppressed, const char *name, uint64_t seq)
{
    for (int k = 0; k < ln->n; k++) {
        struct tg_occupant *c = same_session(u, ln->tid[k], ln->entered[k]);
        if (c)
            tg__link_update(u, c, t->tid, suppressed ? 0 : t->tid, suppressed ? NULL : name, suppressed ? 0 : seq);
    }
    for (int k = 0; k < ln->ns; k++) {
        struct tg_occupant tmp;
        struct tg_slotless sl, *s = &sl;
        if (!slotless_session(u, ln->stid[k], ln->sentered[k], &tmp) ||
            !tg__slotless_find(u->key, ln->stid[k], ln->sentered[k], &sl) || tg__gthread(s->t)->ovf_raced_tid != t->tid)
            continue;
        if (suppressed) {
            tg__gthread(s->t)->ovf_raced_tid = 0;
            continue;
        }
        snprintf(tg__gthread(s->t)->ovf_raced_name, sizeof tg__gthread(s->t)->ovf_raced_name, "%s", name);
        tg__gthread(s->t)->ovf_race_seq = seq;
    }
}

/* Thread t's outermost call on u has returned while a thread that entered
 * during it is still inside and benchmarking.  Autotuner.run ends with
 * `self.nargs = None` (warmup too): t's return cleared the arguments that
 * thread reads on its next _bench, the seeds' TypeError, or its next read
 * finds t's.  At that thread's entry t was on the fast path of a tuned key
 * and nothing was benchmarking, so the entry saw only a low-severity
 * overlap; this is where it turns into a race.  Reported as a race with the
 * roles of the entry (entering = the thread that came in second, inside = t)
 * and seen_at_exit set, and linked like one for the exception report: every
 * benchmarking session is linked before the report lock (link_cleared), and
 * the thread reported as entering is captured then too, so the report is
 * written even when that thread raised and left while t waited for the lock.
 * Only for Triton's Autotuner and its subclasses (g->clears_args): other
 * tuners (inductor's CachingAutotuner, targets=) keep no per-call arguments
 * that their return clears.
 * Called before t leaves u; cheap to rule out (u->nocc > 1 first).  GIL
 * held; `mine` is t's occupant slot (NULL: the session has none, its entry
 * time is not known); allocates one view when it reports. */
void tg__check_race_at_exit(struct tg_tuner *u, PyObject *inst, struct tg_guard *g, struct tg_thread *t,
                            const struct tg_occupant *mine)
{
    /* The occupants first (for a marked tuner such as Triton's Autotuner, C
     * loads only, and what ends the common case: two threads on tuned keys,
     * nobody benchmarking), the tuner's attributes (a dictionary look-up)
     * only when one of them is tuning.  For an unmarked tuner the check is
     * a frame walk, no cheaper than the look-up, and no dearer than before. */
    struct tg_occupant xs; /* x's copy (session_copy, slotless_session) */
    const struct tg_occupant *x = NULL;
    for (int i = 0; i < TG_TUNER_MAX_OCC && !x; i++) {
        const struct tg_occupant *c = slot_copy(u, i, t, &xs);
        /* inside during t's call (entered before it or during it: two
         * threads that entered together, neither tuning yet, then one
         * benchmarks while the other returns), not already linked to a race
         * (at its entry, with t or a third thread benchmarking, or as the
         * thread inside a later entrant's race: that session's race was
         * reported then, and eight threads arriving cold on one key stay one
         * race report instead of adding one seen at a return), alive (the
         * record of a thread that died inside may be another's by now) */
        if (c && tg__link_peek(c) == 0 && tg__tid_alive_cached(c->tid) &&
            tg__other_is_tuning(c, g, 0)) /* a synchronize or tuning frames */
            x = c;
    }
    /* None in a slot: a session without one (more threads inside than u
     * has slots) may be benchmarking, and reads the same arguments.  x then
     * points at its copy, xs, too. */
    int x_slotless = 0;
    struct tg_slotless all[TG_SLOTLESS_MAX];
    const int nall = tg__slotless_all(u->key, all, TG_SLOTLESS_MAX);
    for (int k = 0; !x && k < nall; k++) {
        const struct tg_slotless s = all[k];
        const struct tg_occupant *c = s.t != t ? slotless_session(u, s.tid, s.entered, &xs) : NULL;
        if (c && tg__link_peek(c) == 0 && tg__other_is_tuning(c, g, 0))
            x = c, x_slotless = 1;
    }
    if (!x)
        return;
    pid_t x_tid = x->tid;
    uint64_t x_entered = x->entered_ns;
    x = NULL; /* a class's own __getattribute__ may run below: looked up again */
    if (!nargs_cleared(inst))
        return;
    /* C calls only from here to the report lock: with a GIL x stays inside
     * (a copy either way). */
    x = x_slotless ? slotless_session(u, x_tid, x_entered, &xs) : session_copy(u, x_tid, x_entered, &xs);
    if (!x || tg__link_peek(x) || !tg__other_is_tuning(x, g, 0))
        return;
    struct exit_links ln;
    link_cleared(u, g, t, &ln); /* x among them */
    struct tg_thread_view *xv = calloc(1, sizeof *xv);
    if (xv)
        tg__view_other(xv, x);
    uint64_t t_entered = mine ? mine->entered_ns : 0; /* none: a session without a slot */
    x = NULL; mine = NULL; /* from here on, Python code runs: the links are made */
    char t_name[sizeof xv->name];
    tg_py_thread_name(t->ident, t_name, sizeof t_name);
    if (xv) /* its name while it runs: it may have ended by the time the lock is ours */
        tg_py_thread_name(xv->ident, xv->name, sizeof xv->name);
    relink_cleared(u, t, &ln, 0, t_name, 0); /* a note written before the report names t */
    struct tg_report *r = tg_report_begin(t); /* may let other threads run: x may leave */
    if (!xv) { /* no memory for the early capture: reported only if x is still inside */
        x = x_slotless ? slotless_session(u, x_tid, x_entered, &xs) : session_copy(u, x_tid, x_entered, &xs);
        if (!x) {
            tg_report_end(t);
            return;
        }
    }
    enum tg_emit_status st;
    uint64_t seq = tg__capture_race_at_exit(r, inst, g, t, xv, x, t_entered, t_name, &st);
    relink_cleared(u, t, &ln, st == TG_EMIT_SUPPRESSED, r->inside.name, seq);
    tg_report_end(t);
}
