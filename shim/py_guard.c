/* Guarded methods.
 *
 * A guard is a method descriptor (PyDescr_NewMethod, METH_FASTCALL |
 * METH_KEYWORDS) put on the class in place of the Python function.  Like the
 * function it replaces it binds to instances, `Class.method(obj, ...)` works,
 * and `Class.method` read and assigned back (the save/patch/restore pattern of
 * monkey-patches) is the same descriptor again.  A method descriptor's C
 * function gets no data pointer, so each guard has its own trampoline (a
 * fixed table of TG_MAX_GUARDS tiny functions) that passes its guard.  A call:
 *
 *     guard(self, *args, **kw)
 *         enter(self, this thread)     -- nested / first / race / wait
 *         original(self, *args, **kw)
 *         leave(self, this thread)
 *
 * Everything here runs with the GIL held, except the serialize wait, which
 * releases it while it blocks. */
#include "shim/py_guard.h"
#include "detectors/tuner_table.h"
#include "reports/fatal.h"
#include "reports/native_stack.h"
#include "reports/py_stack.h"
#include "reports/report.h"
#include "reports/trace.h"
#include "shim/suppress_load.h"
#include "core/clock.h"
#include "shim/cuda_stress.h"
#include "core/log.h"
#include "core/options.h"
#include "shim/py_arm.h"
#include "core/thread_state.h"

#include <errno.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TG_MAX_GUARDS 256 /* == the trampoline table below */

struct tg_guard {
    PyObject *orig;       /* the original function (strong reference) */
    int orig_is_function; /* a plain Python function (3.9/3.10 fast call) */
    PyObject *orig_code;  /* its __code__ (strong), NULL if none: where a frame walk stops */
    PyObject *wrapper;    /* the method descriptor put on the class (strong);
                             getattr(cls, name) gives this very object */
    PyObject *cls;        /* the class it was put on (strong) */
    PyObject *pyname;     /* name as a str (strong) */
    uint32_t calls;       /* outermost calls, for the replacement check */
    PyMethodDef def;
    char name[48];        /* "run" */
    char method[112];     /* "Autotuner.run" */
    char cls_name[160];   /* "triton.runtime.autotuner.Autotuner" */
    char doc[96];         /* def.ml_doc: a text signature, so inspect.signature()
                             of the guarded method works (else ValueError) */
    int clears_args;      /* the class is Triton's Autotuner or derives from it:
                             its run()/warmup() end with `self.nargs = None`
                             (the race seen at exit, check_race_at_exit) */
};

static struct tg_guard guards[TG_MAX_GUARDS];
static int nguards;
static struct tg_guard_stats stats;

/* Kernels that made a thread wait (serialize), for the summary. */
#define TG_MAX_CONTENDED 16
static char contended[TG_MAX_CONTENDED][64];
static int ncontended;

/* De-duplication of race reports: (instance, code locations) -> seen. */
#define TG_DEDUP_SLOTS 1024
static uint64_t dedup[TG_DEDUP_SLOTS];

static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;

void tg_report_lock(void)
{
    if (pthread_mutex_trylock(&report_mu) == 0)
        return;
    PyThreadState *ts = tg_py.PyEval_SaveThread();
    pthread_mutex_lock(&report_mu);
    tg_py.PyEval_RestoreThread(ts);
}

void tg_report_unlock(void)
{
    pthread_mutex_unlock(&report_mu);
}

uint64_t tg_now_ns(void)
{
    return tg_mono_ns();
}

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

/* ---- report capture (GIL held; allocates; off the hot path) -------------- */

static void copy_attr_name(char *dst, size_t len, PyObject *obj, const char *attr)
{
    dst[0] = '\0';
    PyObject *v = obj ? tg_py.PyObject_GetAttrString(obj, attr) : NULL;
    const char *s = v ? tg_py.PyUnicode_AsUTF8(v) : NULL;
    if (s)
        snprintf(dst, len, "%s", s);
    if (v)
        tg_py.Py_DecRef(v);
    tg_py.PyErr_Clear();
}

/* The kernel's name: Autotuner.base_fn.__name__, else fn.__name__ (Inductor's
 * CachingAutotuner), else fn.fn.__name__ (Heuristics in between). */
static void kernel_name(PyObject *inst, char *dst, size_t len)
{
    static const char *const paths[][2] = {{"base_fn", NULL}, {"fn", NULL}, {"fn", "fn"}};
    dst[0] = '\0';
    for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !dst[0]; i++) {
        PyObject *a = tg_py.PyObject_GetAttrString(inst, paths[i][0]);
        PyObject *b = (a && paths[i][1]) ? tg_py.PyObject_GetAttrString(a, paths[i][1]) : NULL;
        copy_attr_name(dst, len, paths[i][1] ? b : a, "__name__");
        if (b)
            tg_py.Py_DecRef(b);
        if (a)
            tg_py.Py_DecRef(a);
        tg_py.PyErr_Clear();
    }
    if (!dst[0])
        snprintf(dst, len, "?");
}

static void class_name(PyObject *inst, char *dst, size_t len)
{
    PyObject *type = tg_py.PyObject_Type(inst);
    char mod[96], qual[96];
    copy_attr_name(mod, sizeof mod, type, "__module__");
    copy_attr_name(qual, sizeof qual, type, "__qualname__");
    snprintf(dst, len, "%s.%s", mod, qual);
    if (type)
        tg_py.Py_DecRef(type);
}

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
        if (__atomic_load_n(&th->last.seq, __ATOMIC_RELAXED) == s0)
            return 1;
    }
    memset(out, 0, sizeof *out);
    return 0;
}

/* The hooks for the CUDA side fill these in once it exists. */
__attribute__((weak)) const char *tg_cuda_fn_name(unsigned fn) { (void)fn; return "?"; }
__attribute__((weak)) int tg_cuda_current_device(void) { return -1; }
__attribute__((weak)) const char *tg_cuda_kernel_name(unsigned long long func, char *buf, size_t n)
{
    (void)func;
    if (n)
        buf[0] = '\0';
    return buf;
}

static struct tg_report report; /* one at a time: the GIL orders writers */

/* Fill and emit a race report.  Returns its seq if written, 0 if it was a
 * repeat or a low-severity overlap not shown at this verbosity. */
/* The common head of every report about tuner inst (r was zeroed by the
 * caller).  Runs Python code (attribute look-ups): other threads may run. */
static void begin_report(struct tg_report *r, enum tg_report_kind kind, PyObject *inst, const struct tg_guard *g)
{
    r->kind = kind;
    r->pid = getpid();
    const char *rank = getenv("RANK");
    r->rank = rank ? atoi(rank) : -1;
    r->mode = tg_mode_name(tg_opts.mode);
    r->instance = (uintptr_t)inst;
    r->ts_ns = tg_mono_ns();
    if (inst) {
        class_name(inst, r->tuner_class, sizeof r->tuner_class);
        kernel_name(inst, r->kernel, sizeof r->kernel);
    }
    snprintf(r->method, sizeof r->method, "%s", g ? g->method : "?");
}

/* The calling thread as a report shows it: live Python and native stacks. */
static void view_self(struct tg_thread_view *e, struct tg_thread *t, const char *where)
{
    e->tid = t->tid;
    e->ident = t->ident;
    tg_py_thread_name(t->ident, e->name, sizeof e->name);
    tg_py_capture_frames(e, NULL);
    e->nnative = tg_native_capture(e->native, TG_MAX_NATIVE_FRAMES, 2);
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
    tg_py_capture_frames(in, o->tstate);
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
    in->benchmarking = ot->session_syncs > 0 || ot->session_launches > 1 || frames_show_tuning(in);
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
    v->nnative = tg_native_capture(v->native, TG_MAX_NATIVE_FRAMES, 2);
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
 * Its CUDA record says so once it synchronized or launched twice in the
 * session; before that (pruning, compiling) its Python frames do: walk them
 * from the innermost out to the guarded method's own frame, looking for a
 * tuning function.  Only names are read; a few frames on the fast path.
 * count_launches 0: launches are no evidence (a fast path whose config
 * pre_hook launches a kernel, zero_(), launches twice without tuning).
 * GIL held; the other thread is blocked with the GIL released. */
static int other_is_tuning(const struct tg_occupant *o, const struct tg_guard *g, int count_launches)
{
    const struct tg_thread *ot = o->thread;
    if (ot->session_syncs > 0 || (count_launches && ot->session_launches > 1))
        return 1;
    static const char *const tuning[] = {"_bench", "benchmark", "do_bench", "check_disk_cache", "prune_configs",
                                         "warmup", "benchmark_all_configs", "autotune_to_one_config",
                                         "coordinate_descent_tuning", "precompile"};
    int found = 0;
    PyFrameObject *f = o->tstate ? tg_py.PyThreadState_GetFrame((PyThreadState *)o->tstate) : NULL;
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
    tg_py.PyErr_Clear();
    return found;
}

/* What a race left for the exception link (see report_exception). */
struct race_link {
    pid_t tid;          /* the other thread, 0 when the race is not linked */
    char name[48];
    uint64_t seq;       /* its report's seq, 0 if it was a repeat */
};

/* halt_on_race and deadlock=abort: stop the process now, after the report,
 * with what a normal exit would leave: the trace closed (trace=1, its ']'),
 * the summary line.  Exit status `exitcode`, else 66. */
static void halt_now(void)
{
    tg_trace_close();
    tg_arm_exit_summary();
    _exit(tg_opts.exitcode >= 0 ? tg_opts.exitcode : 66);
}

/* Count race report r (filled, suppressions checked) and write it, unless
 * it repeats one already written: same instance, same code locations on both
 * sides, same `salt` (what saw it).  Returns its seq, 0 for a repeat (counted
 * in races_seen only).  halt_on_race ends the process here.  GIL and the
 * report lock held. */
static uint64_t emit_race(struct tg_report *r, uintptr_t inst, uint64_t salt)
{
    stats.races_seen += r->high_severity;
    uint64_t h = tg_py_frames_hash(&r->entering, 6) ^ (tg_py_frames_hash(&r->inside, 3) * 31) ^
                 ((uint64_t)inst * 0x9E3779B97F4A7C15ull) ^ salt;
    h |= 1;
    unsigned slot = (unsigned)(h >> 40) & (TG_DEDUP_SLOTS - 1);
    for (unsigned probe = 0; probe < TG_DEDUP_SLOTS; probe++, slot = (slot + 1) & (TG_DEDUP_SLOTS - 1)) {
        if (dedup[slot] == h)
            return 0;
        if (dedup[slot] == 0) {
            dedup[slot] = h;
            break;
        }
    }
    if (r->high_severity)
        stats.races++;
    r->seq = ++stats.reports;
    tg_sink_emit(r);
    tg_trace_race(r); /* no-op unless trace=1 */
    if (tg_opts.halt_on_race && r->high_severity)
        halt_now();
    return r->seq;
}

/* Thread t enters u while `other` is inside.  Fills and emits the report
 * (unless it is a repeat, suppressed, or a low-severity overlap at
 * verbosity 0) and, for a high-severity race, marks the other occupant and
 * fills *link for t's own occupant.  GIL held; other is valid on entry only:
 * the report lock and the name look-ups can let other threads run. */
static void report_race(struct tg_tuner *u, PyObject *inst, struct tg_guard *g, struct tg_thread *t,
                        const struct tg_occupant *other, int serialized, struct race_link *link)
{
    memset(link, 0, sizeof *link);
    /* A low-severity overlap (fast path of a tuned key) is only counted at
     * verbosity 0: decide that before paying for stacks and names, since two
     * threads calling one tuned kernel overlap on every other call.  C calls
     * only: other stays valid. */
    if (tg_opts.verbosity < 1 && !other_is_tuning(other, g, 1)) {
        stats.overlaps++;
        return;
    }
    pid_t other_tid = other->tid;
    tg_report_lock(); /* may let other threads run: look other up again */
    other = occupant_by_tid(u, other_tid);
    if (!other) {
        tg_report_unlock(); /* it left while we waited: no overlap any more */
        return;
    }
    struct tg_report *r = &report;
    t->busy++;
    memset(r, 0, sizeof *r);
    struct tg_thread_view *e = &r->entering, *in = &r->inside;
    /* C-only captures first, while the other thread is certainly inside. */
    view_other_c(in, other);
    view_self_c(e, t, "at entry");
    int high = in->benchmarking;
    if (high) {
        /* Both sessions now overlap: either may end in the exception. */
        struct tg_occupant *mo = (struct tg_occupant *)other;
        mo->raced_tid = t->tid;
        link->tid = other_tid;
    }
    other = NULL; /* from here on, Python code runs */
    begin_report(r, TG_REPORT_RACE, inst, g);
    r->serialized = serialized;
    e->entered_ns = r->ts_ns;
    tg_py_thread_name(t->ident, e->name, sizeof e->name);
    if (e->has_cuda) /* a driver call (cuFuncGetName), after the C-only captures */
        tg_cuda_kernel_name(e->cuda.func, e->cuda_kernel, sizeof e->cuda_kernel);
    view_other_names(in);
    r->high_severity = high;
    snprintf(link->name, sizeof link->name, "%s", in->name);

    if (tg_supp_check(r)) { /* suppressions=: neither reported nor counted, nor linked */
        struct tg_occupant *mo = link->tid ? occupant_by_tid(u, link->tid) : NULL;
        if (mo && mo->raced_tid == t->tid) /* marked above: its exception must not name this race */
            mo->raced_tid = 0;
        link->tid = 0;
        goto out;
    }
    if (!r->high_severity) {
        stats.overlaps++;
        if (tg_opts.verbosity < 1)
            goto out;
    }
    uint64_t seq = emit_race(r, (uintptr_t)inst, 0);
    link->seq = r->high_severity ? seq : 0;
out:
    if (link->tid) {
        /* The other occupant's link, if it is still inside. */
        struct tg_occupant *mo = occupant_by_tid(u, link->tid);
        if (mo) {
            snprintf(mo->raced_name, sizeof mo->raced_name, "%s", e->name);
            mo->race_seq = link->seq;
        }
    }
    t->busy--;
    tg_report_unlock();
}

/* Thread t's outermost call on u has returned while a thread that entered
 * during it is still inside and benchmarking.  Autotuner.run ends with
 * `self.nargs = None` (warmup too): t's return cleared the arguments that
 * thread reads on its next _bench, the seeds' TypeError, or its next read
 * finds t's.  At that thread's entry t was on the fast path of a tuned key
 * and nothing was benchmarking, so the entry saw only a low-severity
 * overlap; this is where it turns into a race.  Reported as a race with the
 * roles of the entry (entering = the thread that came in second, inside = t)
 * and seen_at_exit set, and linked like one for the exception report.
 * Only for Triton's Autotuner and its subclasses (g->clears_args): other
 * tuners (inductor's CachingAutotuner, targets=) keep no per-call arguments
 * that their return clears.
 * Called before t leaves u; cheap to rule out (u->nocc > 1 first).  GIL
 * held; `mine` is t's occupant slot. */
static int tid_alive(pid_t tid);

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
    tg_py.PyErr_Clear();
    return cleared;
}

/* The occupant of u that is thread tid in the session it entered at
 * entered (ticks): NULL when it left, or left and came back. */
static struct tg_occupant *same_session(struct tg_tuner *u, pid_t tid, uint64_t entered)
{
    struct tg_occupant *o = occupant_by_tid(u, tid);
    return o && o->entered_ns == entered ? o : NULL;
}

static void check_race_at_exit(struct tg_tuner *u, PyObject *inst, struct tg_guard *g, struct tg_thread *t,
                               const struct tg_occupant *mine)
{
    if (!nargs_cleared(inst))
        return;
    const struct tg_occupant *x = NULL;
    for (int i = 0; i < TG_TUNER_MAX_OCC && !x; i++) {
        const struct tg_occupant *c = &u->occ[i];
        /* entered during t's call, not already linked to a race (a race seen
         * at its entry, with t benchmarking, was reported then), alive (the
         * record of a thread that died inside may be another's by now) */
        if (c->thread && c->thread != t && c->entered_ns > mine->entered_ns && c->raced_tid == 0 &&
            tid_alive(c->tid) && other_is_tuning(c, g, 0)) /* a synchronize or tuning frames */
            x = c;
    }
    if (!x)
        return;
    pid_t x_tid = x->tid;
    uint64_t x_entered = x->entered_ns;
    t->busy++;
    tg_report_lock(); /* may let other threads run: look both up again, same sessions */
    x = same_session(u, x_tid, x_entered);
    mine = occupant_by_tid(u, t->tid);
    if (!x || !mine || x->raced_tid || !other_is_tuning(x, g, 0)) {
        t->busy--;
        tg_report_unlock();
        return;
    }
    struct tg_report *r = &report;
    memset(r, 0, sizeof *r);
    struct tg_thread_view *e = &r->entering, *in = &r->inside;
    view_other_c(e, x); /* C calls only: x is still inside */
    view_self_c(in, t, "at return");
    in->entered_ns = tg_ticks_to_ns(mine->entered_ns);
    in->launches = t->session_launches;
    in->syncs = t->session_syncs;
    in->benchmarking = t->session_syncs > 0 || t->session_launches > 1;
    /* Link x's session now, while its slot is certainly valid: its exception
     * names t even if the report below is suppressed or a repeat. */
    struct tg_occupant *xo = (struct tg_occupant *)x;
    xo->raced_tid = t->tid;
    x = NULL; xo = NULL; mine = NULL; /* from here on, Python code runs */
    begin_report(r, TG_REPORT_RACE, inst, g);
    r->high_severity = 1;
    r->seen_at_exit = 1;
    view_other_names(e);
    tg_py_thread_name(t->ident, in->name, sizeof in->name);
    if (in->has_cuda)
        tg_cuda_kernel_name(in->cuda.func, in->cuda_kernel, sizeof in->cuda_kernel);
    u->races++;
    tg_stress_wake(); /* stress=1: the race showed; end the holds (shim/cuda_stress.h) */
    int suppressed = tg_supp_check(r);
    uint64_t seq = suppressed ? 0 : emit_race(r, (uintptr_t)inst, 0x5EE1A7E417ull);
    struct tg_occupant *back = same_session(u, x_tid, x_entered);
    if (back && back->raced_tid == t->tid) {
        /* suppressed: unlinked, as at entry, so its exception is not reported;
         * the mark stays 0 only if nothing else linked it meanwhile */
        back->raced_tid = suppressed ? 0 : t->tid;
        snprintf(back->raced_name, sizeof back->raced_name, "%s", in->name);
        back->race_seq = seq;
    }
    t->busy--;
    tg_report_unlock();
}

/* Frames of a traceback object, most recent call first, then the caller's
 * frames: the stack the user sees printed. */
static void traceback_frames(struct tg_thread_view *v, PyObject *tb)
{
    struct tg_thread_view tmp;
    int n = 0;
    PyObject *cur = tb;
    if (cur)
        tg_py.Py_IncRef(cur);
    while (cur && cur != tg_py.none && n < TG_MAX_PY_FRAMES) {
        PyObject *frame = tg_py.PyObject_GetAttrString(cur, "tb_frame");
        PyObject *lineno = tg_py.PyObject_GetAttrString(cur, "tb_lineno");
        if (frame) {
            PyObject *code = tg_py.PyFrame_GetCode((PyFrameObject *)frame);
            copy_attr_name(tmp.py[n].file, sizeof tmp.py[n].file, code, "co_filename");
            copy_attr_name(tmp.py[n].func, sizeof tmp.py[n].func, code,
                           tg_py.minor >= 11 ? "co_qualname" : "co_name");
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
        tg_py.PyErr_Clear();
    }
    if (cur)
        tg_py.Py_DecRef(cur);
    /* The traceback runs outermost to innermost: reverse it. */
    v->npy = 0;
    for (int i = n - 1; i >= 0; i--)
        v->py[v->npy++] = tmp.py[i];
    struct tg_thread_view callers;
    tg_py_capture_frames(&callers, NULL);
    for (int i = 0; i < callers.npy && v->npy < TG_MAX_PY_FRAMES; i++)
        v->py[v->npy++] = callers.py[i];
    v->py_truncated = callers.py_truncated || v->npy == TG_MAX_PY_FRAMES;
}

/* A guarded call whose session raced ended in an exception: say so, in the
 * report and (3.11+) as a note on the exception itself, so the traceback on
 * the user's screen points at the race.  The exception stays set. */
static void report_exception(PyObject *inst, struct tg_guard *g, struct tg_thread *t, const struct tg_occupant *o)
{
    PyObject *type, *value, *tb;
    tg_py.PyErr_Fetch(&type, &value, &tb);
    if (!type)
        return;
    tg_py.PyErr_NormalizeException(&type, &value, &tb);
    tg_report_lock();
    t->busy++;
    struct tg_report *r = &report;
    memset(r, 0, sizeof *r);
    begin_report(r, TG_REPORT_EXCEPTION, inst, g);
    r->race_seq = o->race_seq;
    copy_attr_name(r->exc_type, sizeof r->exc_type, type, "__name__");
    PyObject *msg = value ? tg_py.PyObject_Str(value) : NULL;
    const char *m = msg ? tg_py.PyUnicode_AsUTF8(msg) : NULL;
    snprintf(r->exc_msg, sizeof r->exc_msg, "%s", m ? m : "");
    if (msg)
        tg_py.Py_DecRef(msg);
    tg_py.PyErr_Clear();

    struct tg_thread_view *e = &r->entering;
    e->tid = t->tid;
    e->ident = t->ident;
    tg_py_thread_name(t->ident, e->name, sizeof e->name);
    traceback_frames(e, tb);
    struct tg_thread_view *other = &r->inside;
    other->tid = o->raced_tid;
    snprintf(other->name, sizeof other->name, "%s", o->raced_name);
    snprintf(r->detail, sizeof r->detail,
             "this %s was raised in a call that raced with thread '%s' (tid=%d) on %s of kernel '%s'",
             r->exc_type, other->name[0] ? other->name : "?", (int)other->tid, r->method, r->kernel);
    stats.exceptions++;
    r->seq = ++stats.reports;
    tg_sink_emit(r);
    if (tg_py.minor >= 11 && value) {
        /* PEP 678: the note is printed under the traceback. */
        char note[512];
        const char *path = tg_sink_text_path();
        snprintf(note, sizeof note, "tunerguard: %s; see %s", r->detail, path[0] ? path : "the report");
        PyObject *res = tg_py.PyObject_CallMethod(value, "add_note", "s", note);
        if (res)
            tg_py.Py_DecRef(res);
        tg_py.PyErr_Clear();
    }
    t->busy--;
    tg_report_unlock();
    tg_py.PyErr_Restore(type, value, tb);
}

static void note_contended(PyObject *inst)
{
    char k[64];
    kernel_name(inst, k, sizeof k);
    for (int i = 0; i < ncontended; i++)
        if (strcmp(contended[i], k) == 0)
            return;
    if (ncontended < TG_MAX_CONTENDED)
        snprintf(contended[ncontended++], sizeof contended[0], "%s", k);
}

/* A kernel name for a tuner table entry (its key is the instance). */
static void tuner_kernel(const struct tg_tuner *u, char *buf, size_t len)
{
    kernel_name((PyObject *)u->key, buf, len);
}

/* serialize: thread t waiting for u would close a cycle of waits (path[0] is
 * u).  Report it with the stacks of t and of u's holder; the policy decides.
 * Returns 1 if t should proceed unserialized. */
static int report_deadlock(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                           struct tg_tuner **path, int n)
{
    tg_report_lock();
    /* Waiting for the lock may have let threads run: is the cycle still there?
     * Once it is, it stays: every other thread on it is blocked in a wait. */
    n = tg_tuner_wait_cycle(u, t, path, 16);
    if (n == 0) {
        tg_report_unlock();
        return 0;
    }
    struct tg_report *r = &report;
    t->busy++;
    memset(r, 0, sizeof *r);
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
    stats.deadlocks++;
    r->seq = ++stats.reports;
    tg_sink_emit(r);
    t->busy--;
    tg_report_unlock();
    if (tg_opts.deadlock == TG_DEADLOCK_ABORT)
        halt_now();
    return 1;
}

/* Is thread tid of this process still there?  tgkill with signal 0 sends
 * nothing; ESRCH means the thread is gone. */
static int tid_alive(pid_t tid)
{
    int saved = errno;
    int alive = syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH;
    errno = saved;
    return alive;
}

/* Release the holds of threads that died inside u, and report each.
 * Returns how many.  GIL held. */
static int reap_dead(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g)
{
    pid_t dead[TG_TUNER_MAX_OCC];
    unsigned long ident[TG_TUNER_MAX_OCC];
    int n = tg_tuner_reap(u, tid_alive, dead, ident, TG_TUNER_MAX_OCC);
    for (int i = 0; i < n && i < TG_TUNER_MAX_OCC; i++) {
        tg_report_lock();
        struct tg_report *r = &report;
        t->busy++;
        memset(r, 0, sizeof *r);
        view_self(&r->entering, t, "entering");
        r->inside.tid = dead[i];
        r->inside.ident = ident[i];
        tg_py_thread_name(ident[i], r->inside.name, sizeof r->inside.name);
        begin_report(r, TG_REPORT_HOLDER_DIED, inst, g);
        snprintf(r->detail, sizeof r->detail,
                 "thread tid=%d left %s of kernel '%s' without returning (it died inside: pthread_exit or a thread "
                 "destroyed under Python); its hold was released",
                 (int)dead[i], g ? g->method : "?", r->kernel);
        stats.holders_died++;
        r->seq = ++stats.reports;
        tg_sink_emit(r);
        t->busy--;
        tg_report_unlock();
    }
    return n;
}

/* serialize: the wait has lasted wait_timeout seconds.  GIL held. */
static void report_wait_timeout(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                                uint64_t waited_ns)
{
    tg_report_lock();
    const struct tg_occupant *h = tg_tuner_other(u, t); /* after the lock: it may have left */
    if (!h) {
        tg_report_unlock();
        return;
    }
    struct tg_report *r = &report;
    t->busy++;
    memset(r, 0, sizeof *r);
    view_other_c(&r->inside, h);
    view_self(&r->entering, t, "waiting");
    view_other_names(&r->inside);
    begin_report(r, TG_REPORT_WAIT_TIMEOUT, inst, g);
    snprintf(r->detail, sizeof r->detail,
             "this thread has waited %.1f s for '%s' (wait_timeout=%d s); the holder is shown below; the wait goes on",
             (double)waited_ns / 1e9, r->kernel, tg_opts.wait_timeout);
    stats.wait_timeouts++;
    r->seq = ++stats.reports;
    tg_sink_emit(r);
    t->busy--;
    tg_report_unlock();
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
    if (n > 0 && report_deadlock(u, t, inst, g, path, n)) {
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
                report_wait_timeout(u, t, inst, g, tg_mono_ns() - t0);
            }
        }
        /* Another thread may have entered while we waited for the GIL: loop. */
    }
    t->waiting_for = NULL;
    uint64_t dt = tg_mono_ns() - t0;
    tg_tuner_served(u, ticket, queued, dt);
    tg_tuner_unpin(u); /* the caller enters now, with no Python code between */
    stats.waits++;
    stats.wait_ns += dt;
    u->waits++;
    u->wait_ns += dt;
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_end(t);
    return 1;
}

/* verbosity>=1: a method_replaced report for guard g, whose class
 * attribute is now `qual` defined at file:line (NULLs: unknown), found by
 * the calling thread at its call.  GIL held; the caller is busy. */
static void report_replaced(struct tg_guard *g, const char *qual, const char *file, const char *line)
{
    tg_report_lock();
    struct tg_report *r = &report;
    memset(r, 0, sizeof *r);
    begin_report(r, TG_REPORT_METHOD_REPLACED, NULL, g);
    snprintf(r->tuner_class, sizeof r->tuner_class, "%s", g->cls_name);
    if (file)
        snprintf(r->detail, sizeof r->detail, "%s = %s at %s:%s", g->method, qual ? qual : "?", file,
                 line ? line : "?");
    else
        snprintf(r->detail, sizeof r->detail, "%s = %s", g->method, qual ? qual : "an object without code");
    view_self(&r->entering, tg__self(), "at the call");
    r->seq = ++stats.reports;
    tg_sink_emit(r);
    tg_report_unlock();
}

/* ---- replaced methods --------------------------------------------------------
 *
 * CPython raises no audit event for a plain class attribute assignment, so
 * `Autotuner.run = my_locked_run` (seeds/001) is found where it shows: the
 * replacement, if it chains to the original, calls this guard with the class
 * attribute no longer being ours.  The check costs one getattr on the class;
 * it runs on every outermost call for the first 1024 calls of a guard (when
 * monkey-patches happen: at start-up), then on every 64th. */
static void check_replaced(struct tg_guard *g)
{
    uint32_t n = g->calls++;
    if (n >= 1024 && (n & 63) != 0)
        return;
    PyObject *cur = tg_py.PyObject_GetAttr(g->cls, g->pyname);
    if (!cur) {
        tg_py.PyErr_Clear();
        return;
    }
    if (cur != g->wrapper && !tg_guard_is_ours(cur)) {
        char where[300] = "";
        PyObject *code = tg_py.PyObject_GetAttrString(cur, "__code__");
        PyObject *file = code ? tg_py.PyObject_GetAttrString(code, "co_filename") : NULL;
        PyObject *line = code ? tg_py.PyObject_GetAttrString(code, "co_firstlineno") : NULL;
        PyObject *qn = tg_py.PyObject_GetAttrString(cur, "__qualname__");
        const char *fs = file ? tg_py.PyUnicode_AsUTF8(file) : NULL;
        const char *qs = qn ? tg_py.PyUnicode_AsUTF8(qn) : NULL;
        tg_py.PyErr_Clear();
        PyObject *ls = line ? tg_py.PyObject_Str(line) : NULL;
        const char *lstr = ls ? tg_py.PyUnicode_AsUTF8(ls) : NULL;
        if (fs)
            snprintf(where, sizeof where, " by %s defined at %s:%s", qs ? qs : "?", fs, lstr ? lstr : "?");
        tg_py.PyErr_Clear();
        /* Guard it on the class that holds the attribute now. */
        if (tg_guard_install(g->cls, g->name, "replaced by user code") > 0) {
            tg__info(1, "%s was replaced%s; the new one is guarded too", g->method, where);
            if (tg_opts.verbosity >= 1)
                report_replaced(g, qs, fs, lstr);
        }
        PyObject *objs[] = {ls, qn, line, file, code};
        for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
            if (objs[i])
                tg_py.Py_DecRef(objs[i]);
        tg_py.PyErr_Clear();
    }
    tg_py.Py_DecRef(cur);
}

/* ---- the guard itself ------------------------------------------------------ */

/* The original takes self first: rebuild the vector [self, args..., kwargs...].
 * A method descriptor's caller keeps self right before args (descrobject.c
 * passes args + 1), but that is CPython's detail, so copy: on the stack up to
 * 32 entries, else one allocation (a call with more than 31 arguments). */
static PyObject *guard_call(struct tg_guard *g, PyObject *self, PyObject *const *args0, Py_ssize_t nargs0,
                            PyObject *kwnames);

static PyObject *guard_entry(struct tg_guard *g, PyObject *self, PyObject *const *a, Py_ssize_t n,
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

/* One trampoline per guard slot: 256 of them, named by the slot's four
 * base-4 digits (tramp_0000 .. tramp_3333). */
#define TG_TRAMP(a, b, c, d)                                                                          \
    static PyObject *tramp_##a##b##c##d(PyObject *self, PyObject *const *v, Py_ssize_t n, PyObject *k) \
    {                                                                                                 \
        return guard_entry(&guards[a * 64 + b * 16 + c * 4 + d], self, v, n, k);                      \
    }
#define TG_TRAMP4(a, b, c) TG_TRAMP(a, b, c, 0) TG_TRAMP(a, b, c, 1) TG_TRAMP(a, b, c, 2) TG_TRAMP(a, b, c, 3)
#define TG_TRAMP16(a, b) TG_TRAMP4(a, b, 0) TG_TRAMP4(a, b, 1) TG_TRAMP4(a, b, 2) TG_TRAMP4(a, b, 3)
#define TG_TRAMP64(a) TG_TRAMP16(a, 0) TG_TRAMP16(a, 1) TG_TRAMP16(a, 2) TG_TRAMP16(a, 3)
TG_TRAMP64(0) TG_TRAMP64(1) TG_TRAMP64(2) TG_TRAMP64(3)
#define TG_REF(a, b, c, d) (void *)tramp_##a##b##c##d,
#define TG_REF4(a, b, c) TG_REF(a, b, c, 0) TG_REF(a, b, c, 1) TG_REF(a, b, c, 2) TG_REF(a, b, c, 3)
#define TG_REF16(a, b) TG_REF4(a, b, 0) TG_REF4(a, b, 1) TG_REF4(a, b, 2) TG_REF4(a, b, 3)
#define TG_REF64(a) TG_REF16(a, 0) TG_REF16(a, 1) TG_REF16(a, 2) TG_REF16(a, 3)
static void *const trampolines[TG_MAX_GUARDS] = {TG_REF64(0) TG_REF64(1) TG_REF64(2) TG_REF64(3)};

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
        check_replaced(g);
        t->busy--;
    }

    PyObject *inst = args[0];
    struct tg_tuner *u = tg_tuner_get((uintptr_t)inst);
    if (__builtin_expect(!u, 0))
        return call_orig(g, args, nargs, kwnames);

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
    struct race_link link = {0};
    if (v != TG_FIRST) {
        const struct tg_occupant *other = tg_tuner_other(u, t);
        if (other) { /* none: serialize's queue made a free tuner TG_WAIT */
            u->races++;
            report_race(u, inst, g, t, other, v == TG_WAIT, &link);
            tg_stress_wake(); /* stress=1: the race showed; end the holds (shim/cuda_stress.h) */
            /* The report ran Python code: the entry may have been given back. */
            u = tg_tuner_get((uintptr_t)inst);
            if (__builtin_expect(!u, 0))
                return call_orig(g, args, nargs, kwnames);
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
        if (__builtin_expect(!u, 0))
            return call_orig(g, args, nargs, kwnames);
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
        char k_[128]; t->busy++; kernel_name(inst, k_, sizeof k_); t->busy--;
        tg_trace_session_begin(t, g->method, k_, (uintptr_t)inst); }

    PyObject *res = call_orig(g, args, nargs, kwnames);

    /* Another thread inside (rare; one load otherwise): did this return run
     * under its benchmarking?  Only a call that returned: an exception may
     * leave before the tuner's own `self.nargs = None`. */
    if (__builtin_expect(u->nocc > 1, 0) && g->clears_args && o && o->depth == 1 && res != NULL)
        check_race_at_exit(u, inst, g, t, o);
    if (__builtin_expect(res == NULL, 0) && o && o->raced_tid && o->depth == 1)
        report_exception(inst, g, t, o);
    t->depth--;
    t->nheld--;
    tg_tuner_leave(u, t);
    if (t->nheld == 0) tg_tuning_session_end(t, inst, &stats.reports); /* shim/cuda_stress.h */
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_session_end(t);
    return res;
}

/* ---- installing guards ------------------------------------------------------ */

int tg_guard_is_ours(PyObject *value)
{
    for (int i = 0; i < nguards; i++)
        if (guards[i].wrapper == value)
            return 1;
    return 0;
}

/* Is triton.runtime.autotuner.Autotuner in cls.__mro__?  Install time only. */
static int derives_from_triton_autotuner(PyObject *cls)
{
    PyObject *mro = tg_py.PyObject_GetAttrString(cls, "__mro__");
    Py_ssize_t n = mro ? tg_py.PyTuple_Size(mro) : 0;
    int found = 0;
    for (Py_ssize_t i = 0; i < n && !found; i++) {
        PyObject *c = tg_py.PyTuple_GetItem(mro, i); /* borrowed */
        char mod[64], qual[32];
        copy_attr_name(mod, sizeof mod, c, "__module__");
        copy_attr_name(qual, sizeof qual, c, "__qualname__");
        found = strcmp(mod, "triton.runtime.autotuner") == 0 && strcmp(qual, "Autotuner") == 0;
    }
    if (mro)
        tg_py.Py_DecRef(mro);
    tg_py.PyErr_Clear();
    return found;
}

int tg_guard_install(PyObject *cls, const char *name, const char *why)
{
    int rc = 0;
    PyObject *dict = tg_py.PyObject_GetAttrString(cls, "__dict__");
    PyObject *key = tg_py.PyUnicode_FromString(name);
    PyObject *value = (dict && key) ? tg_py.PyObject_GetItem(dict, key) : NULL;
    tg_py.PyErr_Clear();
    if (!value || tg_guard_is_ours(value))
        goto done;
    /* Only plain functions: a staticmethod, classmethod or property is not a
     * per-instance entry point. */
    PyObject *type = tg_py.PyObject_Type(value);
    char tname[64];
    copy_attr_name(tname, sizeof tname, type, "__name__");
    if (type)
        tg_py.Py_DecRef(type);
    if (strcmp(tname, "function") != 0 && strcmp(tname, "cython_function_or_method") != 0 &&
        strcmp(tname, "builtin_function_or_method") != 0)
        goto done;
    if (nguards == TG_MAX_GUARDS) {
        tg__warn("more than %d guarded methods; %s is not guarded", TG_MAX_GUARDS, name);
        rc = -1;
        goto done;
    }
    struct tg_guard *g = &guards[nguards];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    char qual[96], mod[96];
    copy_attr_name(qual, sizeof qual, cls, "__qualname__");
    copy_attr_name(mod, sizeof mod, cls, "__module__");
    snprintf(g->method, sizeof g->method, "%s.%s", qual, name);
    snprintf(g->cls_name, sizeof g->cls_name, "%s.%s", mod, qual);
    g->def.ml_name = g->name;
    g->def.ml_meth = trampolines[nguards];
    g->def.ml_flags = TG_METH_FASTCALL | TG_METH_KEYWORDS;
    /* "run($self, /, *args, **kwargs)\n--\n\n": what inspect.signature()
     * reads from a method descriptor; the arguments pass through unchanged. */
    snprintf(g->doc, sizeof g->doc, "%s($self, /, *args, **kwargs)\n--\n\n", name);
    g->def.ml_doc = g->doc;
    PyObject *wrapper = tg_py.PyDescr_NewMethod(cls, &g->def);
    if (!wrapper) {
        tg_py.PyErr_Clear();
        tg__warn("could not guard %s.%s; it runs unguarded", g->cls_name, name);
        rc = -1;
        goto done;
    }
    g->orig = value;
    g->orig_is_function = strcmp(tname, "function") == 0;
    g->orig_code = tg_py.PyObject_GetAttrString(value, "__code__");
    tg_py.PyErr_Clear();
    tg_py.Py_IncRef(value);
    g->cls = cls;
    tg_py.Py_IncRef(cls);
    g->clears_args = derives_from_triton_autotuner(cls);
    g->pyname = key;
    tg_py.Py_IncRef(key);
    g->wrapper = wrapper; /* our reference keeps it alive and identifiable */
    nguards++;
    stats.guards = nguards;
    if (tg_py.PyObject_SetAttrString(cls, name, wrapper) < 0) {
        tg_py.PyErr_Clear();
        tg__warn("could not set %s.%s; it runs unguarded", g->cls_name, name);
        nguards--;
        rc = -1;
        goto done;
    }
    tg__info(2, "guarding %s (%s)", g->method, why);
    if (nguards == 1) { /* a process with something to guard: worth a crash report */
        tg_fatal_set_context(tg_mode_name(tg_opts.mode), &stats.reports);
        tg_fatal_install(tg_opts.log_path, 1);
    }
    rc = 1;
done:
    if (value)
        tg_py.Py_DecRef(value);
    if (key)
        tg_py.Py_DecRef(key);
    if (dict)
        tg_py.Py_DecRef(dict);
    tg_py.PyErr_Clear();
    return rc;
}

/* fork child: what the parent saw is the parent's to report. */
void tg_guard_atfork_child(void)
{
    int guards_kept = stats.guards;
    memset(&stats, 0, sizeof stats);
    stats.guards = guards_kept;
    ncontended = 0;
    memset(dedup, 0, sizeof dedup);
}

void tg_guard_stats(struct tg_guard_stats *out)
{
    *out = stats;
}

void tg_guard_contended(char *buf, int len)
{
    int used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ncontended && used < len; i++)
        used += snprintf(buf + used, (size_t)(len - used), "%s%s", i ? ", " : "", contended[i]);
}
