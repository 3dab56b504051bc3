/* Report capture for the guarded calls: what a report shows of the threads
 * involved (views), and the reports of each kind a guarded call can find:
 * race (at entry and seen at exit), exception linked to a race, deadlock,
 * wait timeout, holder died, method replaced.  Also the report lock and the
 * de-duplication of race reports.
 *
 * Everything here: GIL held, allocates (Python objects, names, frames), off
 * the hot path: reached only when a call found another thread inside, a wait,
 * an exception in a raced session, or a replaced method. */
#include "guard/guard_internal.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/options.h"
#include "core/process.h"
#include "core/py_attr.h"
#include "core/thread_state.h"
#include "reports/native_stack.h"
#include "reports/py_stack.h"
#include "reports/emit.h"
#include "reports/report.h"
#include "reports/trace.h"
#include "cuda/cuda_hooks.h"
#include "cuda/cuda_stress.h"
#include "loader/py_arm.h"
#include "reports/suppress_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Python-level evidence that a thread is tuning, for when the CUDA hooks saw
 * nothing (no libcuda in the process, or a path they do not cover). */
static int frames_show_tuning(const struct tg_thread_view *v)
{
    static const char *const tuning[] = {"_bench", "benchmark", "do_bench", "check_disk_cache", "prune_configs",
                                         "warmup", "benchmark_all_configs", "autotune_to_one_config",
                                         "coordinate_descent_tuning", "precompile"};
    for (int i = 0; i < v->npy; i++) {
        const char *f = strrchr(v->py[i].func, '.');
        f = f ? f + 1 : v->py[i].func;
        for (size_t k = 0; k < sizeof tuning / sizeof tuning[0]; k++)
            if (strcmp(f, tuning[k]) == 0)
                return 1;
    }
    return 0;
}

/* Returns 0 when no consistent copy could be read (out is then zeroed: its
 * kind NONE means "unknown", not "no call yet"). */
static int read_cuda_call(const struct tg_thread *th, struct tg_cuda_call *out)
{
    /* Seqlock read: the owner writes without waiting for us. */
    for (int tries = 0; tries < 100; tries++) {
        uint32_t s0 = __atomic_load_n(&th->last.seq, __ATOMIC_ACQUIRE);
        if (s0 & 1)
            continue;
        memcpy(out, (const void *)&th->last, sizeof *out);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&th->last.seq, __ATOMIC_RELAXED) == s0) {
            /* The owner's clock (tg_ticks) in CLOCK_MONOTONIC ns, as the
             * reports give every time (core/thread_state.h). */
            if (out->t_enter)
                out->t_enter = tg_ticks_to_ns(out->t_enter);
            if (out->t_exit)
                out->t_exit = tg_ticks_to_ns(out->t_exit);
            return 1;
        }
    }
    memset(out, 0, sizeof *out);
    return 0;
}


/* The common head of every report about tuner inst (r was zeroed by the
 * caller).  Runs Python code (attribute look-ups): other threads may run. */
static void begin_report(struct tg_report *r, enum tg_report_kind kind, PyObject *inst, const struct tg_guard *g)
{
    r->kind = kind;
    r->pid = getpid();
    r->rank = tg_proc_rank();
    r->mode = tg_mode_name(tg_opts.mode);
    r->instance = (uintptr_t)inst;
    r->ts_ns = tg_mono_ns();
    if (inst) {
        tg_py_class_name(inst, r->tuner_class, sizeof r->tuner_class);
        tg_py_kernel_name(inst, r->kernel, sizeof r->kernel);
    }
    snprintf(r->method, sizeof r->method, "%s", g ? g->method : "?");
    r->declared = g && g->declared;
}

/* " of kernel 'K'" in buf, or "" where the tuner names no kernel. */
static const char *of_kernel(const struct tg_report *r, char *buf, size_t size)
{
    if (!r->kernel[0] || (r->kernel[0] == '?' && r->kernel[1] == '\0'))
        return "";
    snprintf(buf, size, " of kernel '%s'", r->kernel);
    return buf;
}

/* The calling thread's native stack from the first frame outside tunerguard
 * inward: the caller of the guard (CPython's call of the method descriptor).
 * What is ours on top (this capture, the report's own functions, the guard)
 * is dropped by address, so the stack is the same however the compiler split
 * or inlined those.  Extra frames are asked for to make up for the dropped
 * ones.  dladdr per dropped frame: report time only. */
__attribute__((noinline)) static int native_from_guard_caller(void **frames, int max)
{
    void *tmp[TG_MAX_NATIVE_FRAMES + 16];
    int n = tg_native_capture(tmp, (int)(sizeof tmp / sizeof tmp[0]), 0);
    Dl_info self, f;
    int first = 0;
    if (dladdr((void *)native_from_guard_caller, &self))
        while (first < n && dladdr((char *)tmp[first] - 1, &f) && f.dli_fbase == self.dli_fbase)
            first++;
    int k = 0;
    for (int i = first; i < n && k < max; i++)
        frames[k++] = tmp[i];
    return k;
}

/* The calling thread as a report shows it: live Python and native stacks. */
static void view_self(struct tg_thread_view *e, struct tg_thread *t, const char *where)
{
    e->tid = t->tid;
    e->ident = t->ident;
    tg_py_thread_name(t->ident, e->name, sizeof e->name);
    tg_py_capture_frames(e, NULL);
    e->nnative = native_from_guard_caller(e->native, TG_MAX_NATIVE_FRAMES);
    snprintf(e->native_where, sizeof e->native_where, "%s", where);
    e->entered_ns = tg_mono_ns();
}

/* Another thread inside a tuner, in two steps.  view_other_c() copies what
 * the report needs from the occupant and the other thread's record, and
 * reads its Python stack through its thread state: C calls only, which never
 * let another thread run, so the other thread is still blocked inside the
 * tuner, with the GIL released, while we read.  view_other_names() then adds
 * the thread's name, which runs Python code (threading's name property) and
 * so may let other threads run: after it, neither the occupant nor the other
 * thread's state may be touched. */
static void view_other_c(struct tg_thread_view *in, const struct tg_occupant *o)
{
    const struct tg_thread *ot = o->thread;
    in->tid = o->tid;
    in->ident = o->ident;
    void *ts = tg__occupant_tstate(o);
    if (ts)
        tg_py_capture_frames(in, ts);
    else if (o->tstate)
        in->py_unreadable = 1; /* finalizing; the view was zeroed: no frame */
    in->entered_ns = tg_ticks_to_ns(o->entered_ns);
    int read_ok = read_cuda_call(ot, &in->cuda);
    if (in->cuda.kind != TG_CUDA_NONE) {
        in->has_cuda = 1;
        snprintf(in->cuda_fn, sizeof in->cuda_fn, "%s", tg_cuda_fn_name(in->cuda.fn));
        if (in->cuda.nframes > 0) {
            in->nnative = in->cuda.nframes;
            memcpy(in->native, in->cuda.frames, sizeof(void *) * (size_t)in->nnative);
            snprintf(in->native_where, sizeof in->native_where, "in %s", in->cuda_fn);
        }
    }
    if (!in->has_cuda && read_ok && ot->entry_device >= 0) {
        in->has_entry_device = 1;
        in->entry_device = ot->entry_device;
    }
    in->launches = ot->session_launches;
    in->syncs = ot->session_syncs;
    in->benchmarking = ot->tuning > 0 || ot->session_tuned || ot->session_syncs > 0 || ot->session_launches > 1 ||
                       frames_show_tuning(in);
}

/* The calling thread's own last CUDA call: which device and stream it was
 * driving when it entered (a thread on another GPU shows another device).
 * The native stack stays the one taken at entry.  Own record: no writer runs
 * concurrently, the seqlock read just copies.  Allocates nothing. */
static void view_self_cuda(struct tg_thread_view *e, const struct tg_thread *t)
{
    read_cuda_call(t, &e->cuda); /* its own record: never torn */
    if (e->cuda.kind == TG_CUDA_NONE) {
        e->entry_device = t->entry_device;
        e->has_entry_device = e->entry_device >= 0;
        return;
    }
    e->has_cuda = 1;
    e->cuda.nframes = 0; /* its stack at that call is not this report's concern */
    snprintf(e->cuda_fn, sizeof e->cuda_fn, "%s", tg_cuda_fn_name(e->cuda.fn));
}

/* The calling thread for a race report, C calls only (the other thread
 * must stay where it is): its Python frames, its native stack from its
 * caller's caller (the guard) inward, and its last CUDA call.  noinline: the
 * frames skipped are counted. */
__attribute__((noinline)) static void view_self_c(struct tg_thread_view *v, struct tg_thread *t, const char *where)
{
    v->tid = t->tid;
    v->ident = t->ident;
    tg_py_capture_frames(v, NULL);
    v->nnative = native_from_guard_caller(v->native, TG_MAX_NATIVE_FRAMES);
    snprintf(v->native_where, sizeof v->native_where, "%s", where);
    view_self_cuda(v, t);
}

static void view_other_names(struct tg_thread_view *in)
{
    tg_py_thread_name(in->ident, in->name, sizeof in->name);
    if (in->has_cuda)
        tg_cuda_kernel_name(in->cuda.func, in->cuda_kernel, sizeof in->cuda_kernel);
}

/* The occupant of u that is thread tid, or NULL (it left meanwhile). */
static struct tg_occupant *occupant_by_tid(struct tg_tuner *u, pid_t tid)
{
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        if (u->occ[i].thread && u->occ[i].tid == tid)
            return &u->occ[i];
    return NULL;
}

/* Is the thread inside tuning (not on the fast path of an already tuned key)?
 * Inside a marked tuning method (t->tuning, guard_install.c) it is.  Its
 * CUDA record says so once it synchronized or launched twice in the
 * session.  For a tuner whose tuning methods are marked that is all (one
 * load each; called for an occupant whose evidence bit is set, see
 * tg__report_race).  For others
 * (targets=), before that (pruning, compiling) its Python frames do: walk them
 * from the innermost out to the guarded method's own frame, looking for a
 * tuning function.  Only names are read; a few frames on the fast path.
 * count_launches 0: launches are no evidence (a fast path whose config
 * pre_hook launches a kernel, zero_(), launches twice without tuning).
 * GIL held; the other thread is blocked with the GIL released. */
int tg__other_is_tuning(const struct tg_occupant *o, const struct tg_guard *g, int count_launches)
{
    const struct tg_thread *ot = o->thread;
    if (g->declared && g->marked)
        return ot->tuning > 0; /* a declared tuner's named step: inside it now, nothing else counts */
    if (ot->tuning > 0 || ot->session_tuned || ot->session_syncs > 0 || (count_launches && ot->session_multi))
        return 1;
    if (g->marked || g->declared)
        return 0; /* its tuning methods would have said so, or a declared tuner's names are its own: no frame walk */
    static const char *const tuning[] = {"_bench", "benchmark", "do_bench", "check_disk_cache", "prune_configs",
                                         "warmup", "benchmark_all_configs", "autotune_to_one_config",
                                         "coordinate_descent_tuning", "precompile"};
    int found = 0;
    void *ts = tg__occupant_tstate(o);
    PyFrameObject *f = ts ? tg_py.PyThreadState_GetFrame((PyThreadState *)ts) : NULL;
    for (int depth = 0; f && depth < 64 && !found; depth++) {
        PyObject *code = tg_py.PyFrame_GetCode(f);
        if (code && code == g->orig_code) {
            tg_py.Py_DecRef(code);
            break; /* the guarded call itself: what is outside is the caller's */
        }
        PyObject *name = code ? tg_py.PyObject_GetAttrString(code, "co_name") : NULL;
        const char *n = name ? tg_py.PyUnicode_AsUTF8(name) : NULL;
        for (size_t k = 0; n && k < sizeof tuning / sizeof tuning[0]; k++)
            found |= strcmp(n, tuning[k]) == 0;
        if (name)
            tg_py.Py_DecRef(name);
        if (code)
            tg_py.Py_DecRef(code);
        PyFrameObject *back = tg_py.PyFrame_GetBack(f);
        tg_py.Py_DecRef((PyObject *)f);
        f = back;
    }
    if (f)
        tg_py.Py_DecRef((PyObject *)f);
    tg_py_drop_error();
    return found;
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
 * the report lock and the name look-ups can let other threads run. */
void tg__report_race(struct tg_tuner *u, PyObject *inst, struct tg_guard *g, struct tg_thread *t,
                     const struct tg_occupant *other, int serialized, struct tg_race_link *link)
{
    memset(link, 0, sizeof *link);
    /* The thread inside to report: one that is benchmarking, if any is (with
     * three threads inside, the first one found may be on a fast path while
     * another benchmarks).  u's first line, which this entry reads anyway,
     * says where to look (detectors/tuner_table.h, occ_ev): an occupant's
     * bits are set whenever its session shows evidence and stay until it
     * leaves, so no bit is a fast path and its record is not read (the common
     * case); a bit is checked against the record, which is the truth (a
     * warmup's tuning is over once it returns; a session nested deeper than
     * held[] has only TG_EV_UNTRACKED).  A tuner whose tuning methods are not
     * marked walks every occupant's frames.  C calls only until the report
     * begins: other stays valid. */
    const struct tg_occupant *tuning = NULL;
    /* At a declared tuner's tuning step (tg__check_race_at_step) t is
     * inside u already and is the one in the step: every overlap is a race. */
    const struct tg_guard *at_step = (const struct tg_guard *)t->step_entry;
    /* t is not inside u (an entry), or is but is skipped below: every bit
     * is another occupant's, and with none set a marked tuner's overlap is
     * decided by one load. */
    const int any_bit = __atomic_load_n(&u->occ_ev_all, __ATOMIC_RELAXED) != 0;
    for (int i = 0; !tuning && (any_bit || !g->marked) && i < TG_TUNER_MAX_OCC; i++)
        if (u->occ_tid[i] != 0 && u->occ_tid[i] != t->tid &&
            (!g->marked || __atomic_load_n(&u->occ_ev[i], __ATOMIC_RELAXED) != 0) &&
            tg__other_is_tuning(&u->occ[i], g, 1))
            tuning = &u->occ[i];
    if (tuning)
        other = tuning;
    /* A low-severity overlap (fast path of a tuned key) is only counted at
     * verbosity 0: decided before paying for stacks and names, since two
     * threads calling one tuned kernel overlap on every other call. */
    /* A declared tuner's race: every overlap, or one in its tuning step.  The
     * same race seen before is counted without its capture (race_again.c). */
    const int declared_race = g->declared && (tuning != NULL || !g->marked || at_step);
    const uint64_t again_key = declared_race ? tg__race_key(inst, at_step ? at_step : g, t, other, serialized) : 0;
    if (again_key && tg__race_again(again_key, t, other, serialized, link))
        return;
    if (tg_opts.verbosity < 1 && !tuning && !declared_race) {
        u->overlaps++; /* on u's first line, which this entry writes anyway (tg_tuner_overlaps) */
        return;
    }
    pid_t other_tid = other->tid;
    struct tg_report *r = tg_report_begin(t); /* may let other threads run: look other up again */
    other = occupant_by_tid(u, other_tid);
    /* The benchmarking one left while we waited: another still benchmarking
     * is the race now (t's call writes and clears what it reads next), and
     * without it reported and linked here its exception would be linked
     * only by a check at t's return, which a return made while nobody
     * begins tuning does not make. */
    for (int i = 0; !other && tuning && i < TG_TUNER_MAX_OCC; i++)
        if (u->occ_tid[i] != 0 && u->occ_tid[i] != t->tid && tg__other_is_tuning(&u->occ[i], g, 1))
            other = tuning = &u->occ[i];
    if (!other) {
        tg_report_end(t); /* it left while we waited: no overlap any more */
        return;
    }
    struct tg_thread_view *e = &r->entering, *in = &r->inside;
    /* C-only captures first, while the other thread is certainly inside. */
    view_other_c(in, other);
    view_self_c(e, t, at_step ? "at its tuning step" : "at entry");
    /* A declared tuner (targets=): every overlap is a race, unless its
     * tuning step is named (marked): then while a thread inside is in it. */
    int high = g->declared ? declared_race : in->benchmarking;
    char step[sizeof r->step] = "";
    if (at_step)
        snprintf(step, sizeof step, "%s", at_step->method);
    else if (g->declared && tuning && other->thread->tuning > 0 && other->thread->tuning_step)
        snprintf(step, sizeof step, "%s", ((const struct tg_guard *)other->thread->tuning_step)->method);
    if (high && !serialized) {
        /* Both sessions now overlap: either may end in the exception.  Not
         * when this thread is about to wait (serialize): the two calls will
         * not overlap, and an exception of either is the program's own. */
        struct tg_occupant *mo = (struct tg_occupant *)other;
        mo->raced_tid = t->tid;
        link->tid = other_tid;
    }
    /* A tuner whose calls keep their arguments on it (Triton's Autotuner):
     * t's call writes them and its return clears them under every session
     * benchmarking now, not only the one reported.  Those not linked yet are
     * linked to this race: a return made while nobody begins tuning makes
     * no check (session_exit), and their TypeError would go unlinked. */
    struct exit_links more = {0};
    if (high && !serialized && g->clears_args)
        link_cleared(u, g, t, &more);
    other = NULL; /* from here on, Python code runs */
    begin_report(r, TG_REPORT_RACE, inst, g);
    memcpy(r->step, step, sizeof step);
    r->seen_at_step = at_step != NULL;
    r->serialized = serialized;
    e->entered_ns = r->ts_ns;
    tg_py_thread_name(t->ident, e->name, sizeof e->name);
    if (e->has_cuda) /* a driver call (cuFuncGetName), after the C-only captures */
        tg_cuda_kernel_name(e->cuda.func, e->cuda_kernel, sizeof e->cuda_kernel);
    view_other_names(in);
    r->high_severity = high;
    snprintf(link->name, sizeof link->name, "%s", in->name);

    enum tg_emit_status st;
    uint64_t seq = tg_emit(r, &st); /* halt_on_race ends the process here */
    if (again_key && (st == TG_EMIT_WRITTEN || st == TG_EMIT_REPEAT || st == TG_EMIT_SUPPRESSED))
        tg__race_remember(again_key, serialized, st == TG_EMIT_SUPPRESSED ? 0 : r->dedup_ref,
                          st == TG_EMIT_SUPPRESSED ? (int)r->supp_ref : 0, e->name, in->name);
    if (st == TG_EMIT_SUPPRESSED) { /* suppressions=: neither reported nor counted, nor linked */
        struct tg_occupant *mo = link->tid ? occupant_by_tid(u, link->tid) : NULL;
        if (mo && mo->raced_tid == t->tid) /* marked above: its exception must not name this race */
            mo->raced_tid = 0;
        link->tid = 0;
    }
    link->seq = r->high_severity ? seq : 0;
    relink_cleared(u, t, &more, st == TG_EMIT_SUPPRESSED, e->name, link->seq);
    if (link->tid) {
        /* The other occupant's link, if it is still inside. */
        struct tg_occupant *mo = occupant_by_tid(u, link->tid);
        if (mo) {
            snprintf(mo->raced_name, sizeof mo->raced_name, "%s", e->name);
            mo->race_seq = link->seq;
        }
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
    mine->stepped = 1; /* its step has run: a later step of another call does not count it */
    if (u->nocc < 2 || mine->raced_tid != 0 || !mine->method)
        return;
    struct tg_guard *g = (struct tg_guard *)mine->method; /* the session's: Tuner.run */
    if (!g->declared)
        return;
    const struct tg_occupant *other = NULL;
    for (int i = 0; i < TG_TUNER_MAX_OCC && !other; i++) {
        const struct tg_occupant *c = &u->occ[i];
        if (u->occ_tid[i] != 0 && u->occ_tid[i] != t->tid && c->thread && tg__tid_alive_cached(c->tid) &&
            (c->thread->tuning > 0 || !c->stepped))
            other = c;
    }
    if (!other)
        return;
    struct tg_race_link link;
    t->step_entry = step;
    tg__report_race(u, inst, g, t, other, 0, &link);
    t->step_entry = NULL;
    tg_stress_wake(); /* stress=1: the race showed; end the holds */
    mine = occupant_by_tid(u, t->tid); /* the report may have let others run */
    if (link.tid && mine && mine->thread == t && mine->raced_tid == 0) {
        mine->raced_tid = link.tid;
        snprintf(mine->raced_name, sizeof mine->raced_name, "%s", link.name);
        mine->race_seq = link.seq;
    }
}

/* inst.nargs is None right now: what t's return left (C calls only).  When
 * it is not, another thread set it after t cleared it (t let the GIL go
 * between its `self.nargs = None` and its return), and nothing was lost. */
static int nargs_cleared(PyObject *inst)
{
    PyObject *dict = tg_py.PyObject_GetAttrString(inst, "__dict__");
    PyObject *v = dict ? tg_py.PyDict_GetItemString(dict, "nargs") : NULL; /* borrowed */
    int cleared = v == tg_py.none;
    if (dict)
        tg_py.Py_DecRef(dict);
    tg_py_drop_error();
    return cleared;
}

/* The occupant of u that is thread tid in the session it entered at
 * entered (ticks): NULL when it left, or left and came back. */
static struct tg_occupant *same_session(struct tg_tuner *u, pid_t tid, uint64_t entered)
{
    struct tg_occupant *o = occupant_by_tid(u, tid);
    return o && o->entered_ns == entered ? o : NULL;
}

/* A session without an occupant slot (guard/slotless.c) as an occupant, in
 * *tmp, for the scans and views made of occupants: NULL when it left.  Its
 * link is its thread's (ovf_raced_tid).  C calls only. */
static struct tg_occupant *slotless_session(struct tg_tuner *u, pid_t tid, uint64_t entered, struct tg_occupant *tmp)
{
    const struct tg_slotless *s = tg__slotless_find(u->key, tid, entered);
    if (!s || !tg__tid_alive_cached(tid))
        return NULL;
    memset(tmp, 0, sizeof *tmp);
    tmp->thread = s->t;
    tmp->tid = tid;
    tmp->ident = s->t->ident;
    tmp->tstate = s->tstate;
    tmp->depth = 1;
    tmp->entered_ns = entered;
    tmp->raced_tid = s->t->ovf_raced_tid;
    return tmp;
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
    if (!mine || mine->thread != t || mine->raced_tid != 0 || !mine->method)
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
    if (!mine || mine->raced_tid) {
        tg_report_end(t);
        return;
    }
    struct tg_thread_view *e = &r->entering;
    view_self_c(e, t, "at its tuning step");
    e->entered_ns = tg_ticks_to_ns(entered);
    mine->raced_tid = t->tid; /* linked: its exception names this race */
    snprintf(mine->raced_name, sizeof mine->raced_name, "%s", "");
    mine = NULL; /* from here on, Python code runs */
    begin_report(r, TG_REPORT_RACE, inst, g);
    r->high_severity = 1;
    r->seen_at_tuning = 1;
    tg_py_thread_name(t->ident, e->name, sizeof e->name);
    if (e->has_cuda)
        tg_cuda_kernel_name(e->cuda.func, e->cuda_kernel, sizeof e->cuda_kernel);
    enum tg_emit_status st;
    uint64_t seq = tg_emit(r, &st); /* halt_on_race ends the process here */
    struct tg_occupant *back = same_session(u, t->tid, entered);
    if (back && back->raced_tid == t->tid) {
        back->raced_tid = st == TG_EMIT_SUPPRESSED ? 0 : t->tid;
        back->race_seq = seq;
    }
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
        struct tg_occupant *c = &u->occ[i];
        if (!c->thread || c->thread == t || c->raced_tid != 0 || u->occ_tid[i] == 0 ||
            !tg__tid_alive_cached(c->tid) || !tg__other_is_tuning(c, g, 0))
            continue;
        c->raced_tid = t->tid;
        c->raced_name[0] = '\0';
        c->race_seq = 0;
        ln->tid[ln->n] = c->tid;
        ln->entered[ln->n++] = c->entered_ns;
    }
    /* Sessions without a slot read the same arguments: linked on their
     * threads' records. */
    ln->ns = 0;
    int cur = 0;
    const struct tg_slotless *s;
    while (ln->ns < (int)(sizeof ln->stid / sizeof ln->stid[0]) && (s = tg__slotless_at(u->key, &cur)) != NULL) {
        struct tg_occupant tmp;
        const struct tg_occupant *c = s->t != t ? slotless_session(u, s->tid, s->entered, &tmp) : NULL;
        if (!c || c->raced_tid != 0 || !tg__other_is_tuning(c, g, 0))
            continue;
        s->t->ovf_raced_tid = t->tid;
        s->t->ovf_raced_name[0] = '\0';
        s->t->ovf_race_seq = 0;
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
        if (!c || c->raced_tid != t->tid)
            continue;
        if (suppressed) {
            c->raced_tid = 0;
            continue;
        }
        snprintf(c->raced_name, sizeof c->raced_name, "%s", name);
        c->race_seq = seq;
    }
    for (int k = 0; k < ln->ns; k++) {
        struct tg_occupant tmp;
        const struct tg_slotless *s = slotless_session(u, ln->stid[k], ln->sentered[k], &tmp)
                                          ? tg__slotless_find(u->key, ln->stid[k], ln->sentered[k])
                                          : NULL;
        if (!s || s->t->ovf_raced_tid != t->tid)
            continue;
        if (suppressed) {
            s->t->ovf_raced_tid = 0;
            continue;
        }
        snprintf(s->t->ovf_raced_name, sizeof s->t->ovf_raced_name, "%s", name);
        s->t->ovf_race_seq = seq;
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
    const struct tg_occupant *x = NULL;
    for (int i = 0; i < TG_TUNER_MAX_OCC && !x; i++) {
        const struct tg_occupant *c = &u->occ[i];
        /* inside during t's call (entered before it or during it: two
         * threads that entered together, neither tuning yet, then one
         * benchmarks while the other returns), not already linked to a race
         * (at its entry, with t or a third thread benchmarking, or as the
         * thread inside a later entrant's race: that session's race was
         * reported then, and eight threads arriving cold on one key stay one
         * race report instead of adding one seen at a return), alive (the
         * record of a thread that died inside may be another's by now) */
        if (c->thread && c->thread != t && c->raced_tid == 0 &&
            tg__tid_alive_cached(c->tid) && tg__other_is_tuning(c, g, 0)) /* a synchronize or tuning frames */
            x = c;
    }
    /* None in a slot: a session without one (more threads inside than u
     * has slots) may be benchmarking, and reads the same arguments.  x then
     * points at its copy, xs. */
    struct tg_occupant xs;
    int x_slotless = 0;
    const struct tg_slotless *s;
    for (int cur = 0; !x && (s = tg__slotless_at(u->key, &cur)) != NULL;) {
        const struct tg_occupant *c = s->t != t ? slotless_session(u, s->tid, s->entered, &xs) : NULL;
        if (c && c->raced_tid == 0 && tg__other_is_tuning(c, g, 0))
            x = c, x_slotless = 1;
    }
    if (!x)
        return;
    pid_t x_tid = x->tid;
    uint64_t x_entered = x->entered_ns;
    x = NULL; /* a class's own __getattribute__ may run below: looked up again */
    if (!nargs_cleared(inst))
        return;
    /* C calls only from here to the report lock: x stays where it is. */
    x = x_slotless ? slotless_session(u, x_tid, x_entered, &xs) : same_session(u, x_tid, x_entered);
    if (!x || x->raced_tid || !tg__other_is_tuning(x, g, 0))
        return;
    struct exit_links ln;
    link_cleared(u, g, t, &ln); /* x among them */
    struct tg_thread_view *xv = calloc(1, sizeof *xv);
    if (xv)
        view_other_c(xv, x);
    uint64_t t_entered = mine ? mine->entered_ns : 0; /* none: a session without a slot */
    x = NULL; mine = NULL; /* from here on, Python code runs: the links are made */
    char t_name[sizeof xv->name];
    tg_py_thread_name(t->ident, t_name, sizeof t_name);
    if (xv) /* its name while it runs: it may have ended by the time the lock is ours */
        tg_py_thread_name(xv->ident, xv->name, sizeof xv->name);
    relink_cleared(u, t, &ln, 0, t_name, 0); /* a note written before the report names t */
    struct tg_report *r = tg_report_begin(t); /* may let other threads run: x may leave */
    if (!xv) { /* no memory for the early capture: reported only if x is still inside */
        x = x_slotless ? slotless_session(u, x_tid, x_entered, &xs) : same_session(u, x_tid, x_entered);
        if (!x) {
            tg_report_end(t);
            return;
        }
    }
    struct tg_thread_view *e = &r->entering, *in = &r->inside;
    if (xv) {
        memcpy(e, xv, sizeof *e);
        free(xv);
    } else {
        view_other_c(e, x); /* C calls only: x is still inside */
        x = NULL;
    }
    view_self_c(in, t, "at return");
    in->entered_ns = t_entered ? tg_ticks_to_ns(t_entered) : 0; /* 0: not known */
    in->launches = t->session_launches;
    in->syncs = t->session_syncs;
    in->benchmarking = t->session_syncs > 0 || t->session_launches > 1;
    /* from here on, Python code runs */
    begin_report(r, TG_REPORT_RACE, inst, g);
    r->high_severity = 1;
    r->seen_at_exit = 1;
    if (!e->name[0])
        tg_py_thread_name(e->ident, e->name, sizeof e->name);
    if (e->has_cuda)
        tg_cuda_kernel_name(e->cuda.func, e->cuda_kernel, sizeof e->cuda_kernel);
    memcpy(in->name, t_name, sizeof in->name);
    if (in->has_cuda)
        tg_cuda_kernel_name(in->cuda.func, in->cuda_kernel, sizeof in->cuda_kernel);
    tg_stress_wake(); /* stress=1: the race showed; end the holds (cuda/cuda_stress.h) */
    enum tg_emit_status st;
    uint64_t seq = tg_emit(r, &st); /* halt_on_race ends the process here */
    relink_cleared(u, t, &ln, st == TG_EMIT_SUPPRESSED, in->name, seq);
    tg_report_end(t);
}

/* Frames of a traceback object, most recent call first, then the caller's
 * frames: the stack the user sees printed. */
static void traceback_frames(struct tg_thread_view *v, PyObject *tb)
{
    static struct tg_thread_view tmp, callers; /* big; under the report lock */
    int n = 0;
    PyObject *cur = tb;
    if (cur)
        tg_py.Py_IncRef(cur);
    while (cur && cur != tg_py.none && n < TG_MAX_PY_FRAMES) {
        PyObject *frame = tg_py.PyObject_GetAttrString(cur, "tb_frame");
        PyObject *lineno = tg_py.PyObject_GetAttrString(cur, "tb_lineno");
        if (frame) {
            PyObject *code = tg_py.PyFrame_GetCode((PyFrameObject *)frame);
            tg_py_attr_str(code, "co_filename", tmp.py[n].file, sizeof tmp.py[n].file);
            tg_py_attr_str(code, tg_py.minor >= 11 ? "co_qualname" : "co_name", tmp.py[n].func,
                           sizeof tmp.py[n].func);
            PyObject *ls = lineno ? tg_py.PyObject_Str(lineno) : NULL;
            const char *l = ls ? tg_py.PyUnicode_AsUTF8(ls) : NULL;
            tmp.py[n].line = l ? atoi(l) : 0;
            if (ls)
                tg_py.Py_DecRef(ls);
            if (code)
                tg_py.Py_DecRef(code);
            n++;
        }
        PyObject *next = tg_py.PyObject_GetAttrString(cur, "tb_next");
        if (frame)
            tg_py.Py_DecRef(frame);
        if (lineno)
            tg_py.Py_DecRef(lineno);
        tg_py.Py_DecRef(cur);
        cur = next;
        tg_py_drop_error();
    }
    if (cur)
        tg_py.Py_DecRef(cur);
    /* The traceback runs outermost to innermost: reverse it. */
    v->npy = 0;
    for (int i = n - 1; i >= 0; i--)
        v->py[v->npy++] = tmp.py[i];
    tg_py_capture_frames(&callers, NULL);
    for (int i = 0; i < callers.npy && v->npy < TG_MAX_PY_FRAMES; i++)
        v->py[v->npy++] = callers.py[i];
    v->py_truncated = callers.py_truncated || v->npy == TG_MAX_PY_FRAMES;
    v->py_omitted = 0; /* the frames cut here are the outermost */
}

/* A guarded call whose session raced ended in an exception the race can have
 * caused (tg__exception_from_race): say so, in the report and (3.11+) as a
 * note on the exception itself, so the traceback on the user's screen points
 * at the race.  The exception stays set. */
void tg__report_exception(PyObject *inst, struct tg_guard *g, struct tg_thread *t, const struct tg_occupant *o,
                          const struct tg_guard *(*guard_at)(int i))
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
    struct tg_report *r = tg_report_begin(t);
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
    traceback_frames(e, tb);
    struct tg_thread_view *other = &r->inside;
    char ok[sizeof r->kernel + 16];
    if (o->raced_tid == t->tid) { /* tg__check_cleared_at_tuning: the other call is not known */
        snprintf(r->detail, sizeof r->detail, "this %s was raised in a call whose arguments another call on %s%s "
                 "cleared before it began tuning", r->exc_type, r->method, of_kernel(r, ok, sizeof ok));
    } else {
        other->tid = o->raced_tid;
        snprintf(other->name, sizeof other->name, "%s", o->raced_name);
        snprintf(r->detail, sizeof r->detail, "this %s was raised in a call that raced with thread %s%s%s(tid=%d) "
                 "on %s%s", r->exc_type, other->name[0] ? "'" : "", other->name, other->name[0] ? "' " : "",
                 (int)other->tid, r->method, of_kernel(r, ok, sizeof ok));
    }
    tg_emit(r, NULL);
    if (tg_py.minor >= 11 && value) {
        /* PEP 678: the note is printed under the traceback. */
        char note[512];
        const char *path = tg_sink_text_path();
        snprintf(note, sizeof note, "tunerguard: %s; see %s", r->detail, path[0] ? path : "the report");
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
    const struct tg_occupant *h = tg_tuner_other(u, t);
    if (h)
        view_other_c(&r->inside, h);
    view_self(&r->entering, t, "waiting");
    view_other_names(&r->inside);
    begin_report(r, TG_REPORT_DEADLOCK, inst, g);
    /* The cycle: each tuner's holder waits for the next; the last is held by t. */
    size_t used = 0;
    for (int k = 0; k < n && used < sizeof r->detail; k++) {
        char kn[64], next[64];
        const struct tg_occupant *o = tg_tuner_other(path[k], NULL);
        tuner_kernel(path[k], kn, sizeof kn);
        tuner_kernel(k + 1 < n ? path[k + 1] : u, next, sizeof next);
        if (k == 0) {
            used += (size_t)snprintf(r->detail + used, sizeof r->detail - used, "this thread (tid=%d) waits for '%s'; ",
                                     (int)t->tid, kn);
        }
        if (o && o->thread != t)
            used += (size_t)snprintf(r->detail + used, sizeof r->detail - used,
                                     "tid=%d holds '%s' and waits for '%s'; ", (int)o->thread->tid, kn,
                                     k + 1 < n ? next : "a tuner this thread holds");
        else if (o)
            used += (size_t)snprintf(r->detail + used, sizeof r->detail - used, "this thread holds '%s'; ", kn);
    }
    if (used < sizeof r->detail)
        snprintf(r->detail + used, sizeof r->detail - used, "%s",
                 tg_opts.deadlock == TG_DEADLOCK_ABORT ? "deadlock=abort: the process stops"
                                                       : "deadlock=proceed: this thread proceeds unserialized");
    tg_emit(r, NULL); /* deadlock=abort ends the process here */
    tg_report_end(t);
    return 1;
}

void tg__report_holders_died(struct tg_thread *t, PyObject *inst, const struct tg_guard *g, const pid_t *dead,
                             const unsigned long *ident, int n)
{
    for (int i = 0; i < n; i++) {
        struct tg_report *r = tg_report_begin(t);
        view_self(&r->entering, t, "entering");
        r->inside.tid = dead[i];
        r->inside.ident = ident[i];
        tg_py_thread_name(ident[i], r->inside.name, sizeof r->inside.name);
        begin_report(r, TG_REPORT_HOLDER_DIED, inst, g);
        char ok[sizeof r->kernel + 16];
        snprintf(r->detail, sizeof r->detail,
                 "thread tid=%d left %s%s without returning (it died inside: pthread_exit or a thread "
                 "destroyed under Python); its hold was released",
                 (int)dead[i], r->method, of_kernel(r, ok, sizeof ok));
        tg_emit(r, NULL);
        tg_report_end(t);
    }
}

/* serialize: the wait has lasted wait_timeout seconds.  GIL held. */
void tg__report_wait_timeout(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                             uint64_t waited_ns, uint64_t stalled_ns)
{
    struct tg_report *r = tg_report_begin(t);
    const struct tg_occupant *h = tg_tuner_other(u, t); /* after the lock: it may have left */
    if (!h) {
        tg_report_end(t);
        return;
    }
    view_other_c(&r->inside, h);
    view_self(&r->entering, t, "waiting");
    view_other_names(&r->inside);
    begin_report(r, TG_REPORT_WAIT_TIMEOUT, inst, g);
    if (stalled_ns) /* the verdict first: the kernel's name may fill the rest */
        snprintf(r->detail, sizeof r->detail,
                 "this thread proceeds unserialized after %.1f s waiting for '%s' (wait_timeout=%d s, "
                 "on_wait_timeout=proceed): the holder, below, is blocked outside tunerguard (no CPU time, no CUDA "
                 "call for %.1f s; a lock of the program's?)",
                 (double)waited_ns / 1e9, r->kernel, tg_opts.wait_timeout, (double)stalled_ns / 1e9);
    else
        snprintf(r->detail, sizeof r->detail,
                 "this thread has waited %.1f s for '%s' (wait_timeout=%d s); the holder is shown below; the wait "
                 "goes on%s",
                 (double)waited_ns / 1e9, r->kernel, tg_opts.wait_timeout,
                 tg_opts.on_wait_timeout == TG_WAIT_END_PROCEED
                     ? " while the holder runs (it proceeds if the holder blocks outside tunerguard)"
                     : " (on_wait_timeout=wait)");
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
    if (file)
        snprintf(r->detail, sizeof r->detail, "%s = %s at %s:%s", g->method, qual ? qual : "?", file,
                 line ? line : "?");
    else
        snprintf(r->detail, sizeof r->detail, "%s = %s", g->method, qual ? qual : "an object without code");
    view_self(&r->entering, t, "at the call");
    tg_emit(r, NULL);
    tg_report_end(t);
}
