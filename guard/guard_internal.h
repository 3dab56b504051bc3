/* Internal to the guard (the files of guard/): the guard record and the calls
 * between the guard's files (those between the files that install guards:
 * guard/install_internal.h).
 *
 *   guard_install.c   the mechanism: guard records, their trampolines (in
 *                     the function's vectorcall slot, or a method descriptor
 *                     put on the class), the replaced-method check
 *   install_lock.c    the install lock (the arming lock): installs, and the
 *                     records they keep, one thread at a time
 *   vc_slot.c         a function's vectorcall slot: found, checked, a
 *                     trampoline put in it
 *   class_lookup.c    what installing reads of a class or a function (its
 *                     tuner family, its own attribute, its kind)
 *   marked_classes.c  the classes whose tuning methods are marked
 *   tuning_marks.c    marking tuning methods: the built-in tuners', and
 *                     the steps tuning= names
 *   guard_setattr.c   what the program sets over a guarded entry point: a
 *                     class attribute (type's tp_setattro hooked, so an
 *                     assignment over a guarded method is guarded at once),
 *                     a tuner instance's own attribute
 *   type_slots.c      type's slots, switched to the watches' hooks in type
 *                     and every metaclass that copied them
 *   run_shapes.c      a subclass's entry point that is no plain function of
 *                     its own (a mixin's, a partialmethod): guarded where
 *                     the MRO finds it, or one line says why not
 *   subclasses.c      a guarded class's subclasses, existing and made later
 *                     (type's tp_new hooked), their overrides guarded
 *   session.c         the policy of a guarded call: enter / leave on the
 *                     tuner table
 *   program_wrapper.c the program's own wrapper of a guarded method: a
 *                     call through it (no session), whether it serializes
 *   lazy_session.c    detect's lazy session: a tuned call registered on the
 *                     tuner table only once it can matter to another thread
 *   serialize_wait.c  serialize's waits (guard/serialize_wait.h): what every
 *                     wait does, the turn, a call made inside a wait
 *   serialize_tuner_wait.c
 *                     the wait for a tuner's lock; threads that died inside
 *   slotless.c        outermost sessions without an occupant slot, listed
 *                     for the links another thread's race makes
 *   gil_state.c       whether the GIL is on, for serialize's turn
 *                     (guard/gil_state.h)
 *   alive.c           whether other threads are alive (rate-limited), and
 *                     whether their Python state can still be read
 *   race_decide.c     whether an overlap is a race (at entry, at a tuning
 *                     step, at a benchmark, at a return) and which sessions
 *                     it links
 *   report_capture.c  the reports those find (race, exception, deadlock,
 *                     wait timeout, holder died, method replaced), handed
 *                     to reports/emit.h
 *   thread_view.c     the threads a report shows
 *   race_again.c      a declared tuner's race seen again, decided before
 *                     its capture
 *   exception_link.c  which exceptions of a raced call the race can have
 *                     caused
 *   py_arm_guard.c    arming, the core library's part: target modules'
 *                     classes guarded
 *   exit_summary.c    the exit line and the counts it sums up
 *   core_entry.c      the core library's one entry point (loader/core_api.h)
 *   lifecycle.c       fork child and shutdown (guard/lifecycle.h)
 *
 * Everything here: GIL held (the serialize wait releases it while it
 * blocks). */
#ifndef TG_GUARD_INTERNAL_H
#define TG_GUARD_INTERNAL_H

#include "core/py_api.h"
#include "detectors/tuner_table.h"
#include "guard/py_guard.h"
#include "core/options.h"
#include "core/insitu.h"
#include "core/thread_state.h"
#include "guard/guard_thread.h"
#include "guard/gil_state.h"
#include "core/report_record.h"
#include "reports/emit.h"
#include "reports/trace.h"

#include <stdint.h>
#include <sys/types.h>

#define TG_MAX_GUARDS 256 /* == the trampoline table of guard_install.c */

struct tg_guard {
    /* orig_vc and descr first: read without the install lock
     * (tg_guard_is_ours), stored whole (guard_install.c's clear_slot). */
    void *orig_vc;        /* a guard in the function's vectorcall slot: the
                             slot's value before (the function itself stays
                             on the class, unchanged to introspection, and
                             is not referenced here); NULL for a method
                             descriptor guard (below) */
    int descr;            /* descriptor guard: a method descriptor whose
                             d_method is &def was put on the class (which
                             alone holds it: a guard keeps no class alive);
                             0 for a vectorcall guard */
    PyObject *orig;       /* descriptor guard: the original function (strong) */
    PyObject *fn_weak;    /* vectorcall guard: a weak reference to the function,
                             dead once nothing can reach the slot's trampoline
                             (the slot is taken again then: free_slot) */
    int orig_is_function; /* a plain Python function (3.9/3.10 fast call) */
    PyObject *orig_code;  /* its __code__ (strong), NULL if none: where a frame walk stops */
    char fn_module[96];   /* the guarded function's __module__ ("" if none) */
    PyObject *cls;        /* the class it was put on: a weak reference to it
                             (cls_weak; guard_install.c's guard_cls), else the
                             class (strong) */
    int cls_weak;
    PyObject *pyname;     /* name as a str (strong) */
    uint32_t calls;       /* outermost calls, for the replacement check (relaxed atomics) */
    PyMethodDef def;
    char name[48];        /* "run" */
    char method[112];     /* "Autotuner.run" */
    char cls_name[160];   /* "triton.runtime.autotuner.Autotuner" */
    char *doc;            /* def.ml_doc (malloc'd): a text signature, so
                             inspect.signature() of the guarded method works
                             (else ValueError), then the function's __doc__ */
    int clears_args;      /* the class derives from a built-in tuner whose
                             run() clears the arguments it keeps on the tuner
                             (core/builtin_tuners.inc: Triton's Autotuner,
                             `self.nargs = None`; the race seen at exit,
                             tg__check_race_at_exit) */
    int marker;           /* a tuning method (Autotuner._bench, prune_configs,
                             ...): its calls only count t->tuning, no session */
    int tuning_entry;     /* a session method that is itself tuning (warmup) */
    int reads_args;       /* a marker that reads those arguments at once
                             (_bench): its entry checks they were not cleared
                             meanwhile (tg__check_cleared_at_tuning) */
    int replacement;      /* installed on a method user code put on the class
                             (Autotuner.run = wrapped): a wrapper, maybe */
    int chains;           /* (relaxed atomics once published) a replacement seen calling the original (guarded)
                             on the same instance: the program's own wrapper;
                             its calls pass through, the original's guard is
                             where a session starts (a wrapper that takes a
                             lock first serializes: no race through it) */
    int said_serializes;  /* verbosity=1 said once that it serializes (an exchange) */
    char where[300];      /* " by wrapped defined at file:line", "" unknown */
    int marked;           /* its class has its tuning methods marked: "is the
                             thread inside tuning?" is t->tuning, never a
                             frame walk (tg__other_is_tuning) */
    int declared;         /* installed for a targets= entry (or a subclass's
                             override of one) on a class that derives from no
                             built-in tuner: a tuner the user declared.  Its
                             overlaps are races (high severity) unless its
                             tuning step is named (tuning=: then it is also
                             marked, and they are races while a thread inside
                             is in that step) */
    PyObject *family;     /* a mixin's function guarded for the tuner classes
                             that inherit it: only calls on instances of this
                             class (a class_ref, family_weak) start sessions,
                             the mixin's other users pass through; NULL: every
                             call (guard_install.c's tg__guard_serves) */
    int family_weak;
    int off_class;        /* the function is not the class's attribute (a
                             partialmethod's function, one a tuner instance's
                             own run calls): no replacement check reads it */
    int has_markers;      /* its class derives from one whose tuning methods
                             tunerguard guarded (tg_guard_install_markers):
                             1 yes, -1 no, 0 not looked yet (session.c);
                             relaxed atomics */
};

/* Does g's class derive from a class whose tuning methods are guarded as
 * markers (a Triton version whose names tunerguard knows;
 * marked_classes.c)?  Looked up once per guard (its first call: markers
 * are put on at arming, before).  GIL held. */
int tg__guard_has_markers(struct tg_guard *g);

/* The counts of the exit summary (tg_guard_stats, exit_summary.c); defined
 * in serialize_wait.c, written by the files that install, call and wait. */
extern struct tg_guard_stats tg__gstats;

/* ---- session.c ------------------------------------------------------------ */

/* A call of descriptor guard g: what its trampoline jumps to.  The original
 * takes self first; a,n,kwnames are the method descriptor's vector without
 * self. */
PyObject *tg__guard_entry(struct tg_guard *g, PyObject *self, PyObject *const *a, Py_ssize_t n,
                          PyObject *kwnames);
/* A call of vectorcall guard g: what its trampoline, in the function's
 * vectorcall slot, jumps to with the function's own vectorcall arguments
 * (self, when there is one, is args[0]). */
PyObject *tg__guard_vcall(struct tg_guard *g, PyObject *func, PyObject *const *args, size_t nargsf,
                          PyObject *kwnames);

/* Is thread tid alive?  tgkill(2) at most every 100 ms per thread (a cache
 * of recent answers, one 64-bit word a slot): contended entries and exits check their
 * occupants, and an overlap of tuned calls must not cost a syscall. */
int tg__tid_alive_cached(pid_t tid);
/* In a fork child: forget the parent's threads (alive.c). */
void tg__alive_atfork_child(void);
/* Occupant o's PyThreadState, for its Python stack, or NULL where it may
 * be released: once the interpreter finalizes, CPython deletes every thread
 * state but the finalizing thread's (a daemon thread inside a tuner stops
 * where it is, its state freed or cleared), so another thread's is never
 * read from then on.  The calling thread is not o.  GIL held. */
void *tg__occupant_tstate(const struct tg_occupant *o);

/* ---- entry_record.c ------------------------------------------------------- */

/* The calling thread's PyThreadState at a guarded call's entry (the
 * registered session's, detect's unregistered one's).  With a GIL it is
 * PyThreadState_Get itself: the guarded call pays nothing for what follows.
 * On a free-threaded build the outermost call also records where it was
 * made from (guard/guard_thread.h, entry_code), for a report whose reader
 * cannot hold the thread (core/thread_hold.h).  GIL held (attached). */
extern PyThreadState *(*tg__entry_tstate_fn)(void);
static inline PyThreadState *tg__entry_tstate(void)
{
    return __atomic_load_n(&tg__entry_tstate_fn, __ATOMIC_RELAXED)();
}
/* Do other threads run Python code while this one does: a free-threaded
 * build with the GIL off now (guard/gil_state.h, asked again here:
 * sys._is_gil_enabled(), a C function, no Python code runs; the pending
 * exception kept)?  Then another thread's frames are read only while it
 * is held (core/thread_hold.h).  With the GIL on (PYTHON_GIL=1, or turned on
 * by an extension's import) this thread holds it, as on a GIL build.  GIL
 * held (attached). */
int tg__others_run(void);
/* Thread ot's entry record as v's Python stack (v->py_at_entry set).
 * Another thread's record, ot inside a tuner. */
void tg__view_at_entry(struct tg_thread_view *v, const struct tg_thread *ot);
/* ot's entry record and last CUDA call (its driver function, kernel and
 * native frames; not its stream) folded into *h with mix, in place of its
 * frames (guard/race_again.c's key without the GIL).  C only. */
void tg__fold_entry(const struct tg_thread *ot, uint64_t *h, uint64_t (*mix)(uint64_t, uint64_t));

/* ---- guard_install.c ------------------------------------------------------ */

/* The replacement check of an outermost call (see guard_install.c): every
 * call for the first 1024 calls of a guard, then one call in 64 at random
 * (xorshift32 on the thread).  Drawn on the thread once the guard is warm:
 * g's line is read by every thread's call, and a count written there by
 * each call made every other thread's next call miss it.  At random, not
 * every 64th call of the thread: a thread alternating between guards in a
 * period that divides 64 would check one of them never.  The caller is
 * busy. */
void tg__guard_check_replaced_slow(struct tg_guard *g);
static inline void tg__guard_check_replaced(struct tg_guard *g, struct tg_thread *t)
{
    if (__builtin_expect(__atomic_load_n(&g->calls, __ATOMIC_RELAXED) < 1024, 0)) {
        __atomic_fetch_add(&g->calls, 1, __ATOMIC_RELAXED); /* a count lost or past 1024: sampling moves */
    } else {
        uint32_t x = tg__gthread(t)->replace_rng ? tg__gthread(t)->replace_rng : (uint32_t)t->tid * 2654435761u | 1u;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        tg__gthread(t)->replace_rng = x;
        if ((x & 63) != 0)
            return;
    }
    tg__guard_check_replaced_slow(g);
}

/* guard/program_wrapper.c: a call of the program's own wrapper of a
 * guarded method (no session of its own), and the line, once, that such a
 * wrapper serializes its callers (this thread entered it while another was
 * inside and found the tuner free).  GIL held. */
void tg__note_wrapper_serializes(struct tg_thread *t);
PyObject *tg__wrapper_call(struct tg_guard *g, struct tg_thread *t, PyObject *f, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames);

/* Threads inside a tuning method now (marker calls, guard/session.c):
 * written when a thread begins or ends tuning, read by serialize's turn.
 * A fork child may keep counts of threads it lacks: then it only skips
 * the turn more often, which is a preference. */
extern _Atomic uint32_t tg__tuning_threads;

/* Is inst an instance of g's family (g->family set, its class alive)?  C
 * calls only, no error set.  GIL held. */
int tg__guard_serves(const struct tg_guard *g, PyObject *inst);

/* ---- guard_setattr.c ------------------------------------------------------ */

/* A tuning method ran on tuner inst while this thread holds no session on
 * it: an entry point set on the instance itself (`tuner.run = f`), which
 * shadows the class's guarded one, is looked for; the function it calls
 * with inst first guarded where it can be, said once per class.  GIL
 * held; the thread busy. */
void tg__guard_tuning_outside(PyObject *inst);

/* ---- race_decide.c, report_capture.c --------------------------------------- */

/* What a race left for the exception link (see tg__report_exception). */
struct tg_race_link {
    pid_t tid;          /* the other thread, 0 when the race is not linked */
    char name[48];
    uint64_t seq;       /* its report's seq, 0 if it was a repeat */
};

/* Thread t enters u while `other` is inside: report it (or count it), and for
 * a high-severity race link both sessions (*link for t's own occupant).
 * other is valid on entry only: the report can let other threads run. */
void tg__report_race(struct tg_tuner *u, PyObject *inst, struct tg_guard *g, struct tg_thread *t,
                     const struct tg_occupant *other, int serialized, struct tg_race_link *link);

/* t, inside a declared tuner inst, enters its tuning step `step` while
 * another thread's call is inside: the race seen at the step. */
void tg__check_race_at_step(PyObject *inst, const struct tg_guard *step, struct tg_thread *t);
/* detect: t's session on inst enters a benchmark and finds the arguments
 * its run() set cleared by a call that came and went (race_decide.c).
 * GIL held. */
void tg__check_cleared_at_tuning(PyObject *inst, struct tg_thread *t);

/* t's outermost call on u returned while a thread that entered during it is
 * benchmarking: the race seen at exit.  `mine` is t's occupant slot (NULL:
 * the session has none); called
 * before t leaves u, only when u->nocc > 1 and g->clears_args. */
void tg__check_race_at_exit(struct tg_tuner *u, PyObject *inst, struct tg_guard *g, struct tg_thread *t,
                            const struct tg_occupant *mine);

/* The race reports' builders (report_capture.c), called by the decisions
 * above under the report lock (r from tg_report_begin) with the occupants
 * looked up again after it.  Each reads the occupants with C calls only,
 * makes the link that must be made while they are valid, then runs Python
 * code (names) and emits r; *st is tg_emit's status, the return its seq.
 *   capture_race: t enters while `other` is inside; high -1: the severity
 *     is whether other is benchmarking, else high; other_tuning: other was
 *     chosen as the occupant that is tuning.  For a high race not
 *     serialized, other is marked raced by t and link->tid set; link->name
 *     is other's name.  A tuning step in tg__gthread(t)->step_entry: seen at it.
 *     without_gil: the fact (report_record.h) tg__report_race decided on.
 *   capture_cleared_at_tuning: t alone, its session `mine` marked raced by
 *     itself.
 *   capture_cleared_at_tuning and capture_race_at_exit ask whether the GIL
 *     is off (tg__others_run) for the fact themselves.
 *   capture_race_at_exit: x benchmarks while t returns; its view xv was
 *     taken (C calls only) and named before the lock, and is freed here;
 *     xv NULL (no memory): read from x now.  t_entered: t's entry time
 *     (ticks, 0 unknown); t_name its name, read before the lock. */
uint64_t tg__capture_race(struct tg_report *r, PyObject *inst, const struct tg_guard *g, struct tg_thread *t,
                          struct tg_tuner *u, const struct tg_occupant *other, int high, int other_tuning,
                          int serialized, int without_gil, struct tg_race_link *link, enum tg_emit_status *st);
uint64_t tg__capture_cleared_at_tuning(struct tg_report *r, PyObject *inst, const struct tg_guard *g,
                                       struct tg_thread *t, struct tg_tuner *u, struct tg_occupant *mine,
                                       enum tg_emit_status *st);
uint64_t tg__capture_race_at_exit(struct tg_report *r, PyObject *inst, const struct tg_guard *g,
                                  struct tg_thread *t, struct tg_thread_view *xv, const struct tg_occupant *x,
                                  uint64_t t_entered, const char *t_name, enum tg_emit_status *st);

/* t's raced session o ends in the exception that is set: when the race can
 * have caused it (tg__exception_from_race; guard_at: the installed guards),
 * report it and add a note to the exception (3.11+).  The exception stays set.
 * u NULL: o is a copy of the session's link (tid, depth, raced_*, race_seq).
 * Else o is t's own slot in u: its link is read under u's entry lock once the
 * report lock is held, since the race's thread, reporting meanwhile, writes
 * the race's seq and name into it after its report (relink_cleared). */
void tg__report_exception(PyObject *inst, struct tg_guard *g, struct tg_thread *t, struct tg_tuner *u,
                          const struct tg_occupant *o, const struct tg_guard *(*guard_at)(int i));

/* The i-th installed guard, NULL past the last (guard_install.c). */
const struct tg_guard *tg__guard_at(int i);

/* ---- thread_view.c -------------------------------------------------------- */

/* The calling thread t, C calls only: its Python frames, its native stack
 * from the guard's caller inward (taken `where`, e.g. "at entry"), now as
 * its entered_ns, and with with_cuda its last CUDA call (device and
 * stream; no stack).  No name: tg__view_names. */
void tg__view_self(struct tg_thread_view *v, struct tg_thread *t, const char *where, int with_cuda);
/* Another thread inside a tuner, occupant o, C calls only (which never let
 * another thread run: it stays blocked inside, with the GIL released, while
 * we read): its Python stack through its thread state, its last CUDA call
 * and the native stack taken at it, its session's counts and whether it is
 * benchmarking.  No name: tg__view_names. */
void tg__view_other(struct tg_thread_view *v, const struct tg_occupant *o);
/* v's thread name and its CUDA call's kernel name: Python code and a driver
 * call, which may let other threads run: after it, no occupant or other
 * thread's state may be touched. */
void tg__view_names(struct tg_thread_view *v);
/* v's Python stack as the user sees it printed: the frames of traceback
 * tb, most recent call first, then the calling thread's frames (its
 * callers).  Uses static buffers: under the report lock. */
void tg__view_traceback(struct tg_thread_view *v, PyObject *tb);

/* ---- slotless.c ----------------------------------------------------------- */

/* An outermost session without an occupant slot (more threads inside one
 * tuner than it has slots), listed while it lasts so that a race found by
 * another thread can link it (ovf_* on its thread record).  The list under
 * slotless.c's own lock; readers get copies. */
struct tg_slotless {
    struct tg_thread *t;  /* valid only while the thread lives: check tid first */
    pid_t tid;
    uintptr_t inst;
    void *tstate;         /* its PyThreadState, for its Python stack */
    uint64_t entered;     /* ticks; which session of the thread it is */
};
void tg__slotless_enter(struct tg_thread *t, uintptr_t inst, void *tstate, uint64_t entered);
void tg__slotless_leave(const struct tg_thread *t);
#define TG_SLOTLESS_MAX 64 /* listed at once */
/* The listed sessions on inst, copied to out[0 .. max) at one moment (a
 * scan by index would skip one that a leave moved): how many. */
int tg__slotless_all(uintptr_t inst, struct tg_slotless *out, int max);
/* That thread's session on inst entered at `entered`, copied to *out: 1,
 * else 0 (it left). */
int tg__slotless_find(uintptr_t inst, pid_t tid, uint64_t entered, struct tg_slotless *out);
void tg__slotless_atfork_child(void);

/* ---- exception links --------------------------------------------------------
 *
 * An occupant's link to a race (raced_tid, raced_name, race_seq: whose race
 * its call's exception is) is written by the reporting thread into another
 * thread's slot, and read by the slot's owner when its call raises.  Both
 * under the tuner's entry lock (detectors/tuner_table.h): a few loads and
 * stores, no Python code, no wait.  raced_tid is also stored whole (a
 * relaxed atomic) so that a scan may skip linked slots before it takes the
 * lock; the decision is taken again under it. */

/* Is c linked now?  A hint: decide under the lock (tg__link_set). */
static inline pid_t tg__link_peek(const struct tg_occupant *c)
{
    return __atomic_load_n(&c->raced_tid, __ATOMIC_RELAXED);
}

/* Copy of a thread name, cut to n - 1 bytes; no libc call (under a spin lock). */
static inline void tg__link_name(char *dst, size_t n, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < n; i++)
        dst[i] = src[i];
    dst[i] = '\0';
}

/* Link c (of u) to thread tid's race, named name (NULL: left as it is),
 * seq; unless c is linked already and !force.  1 when linked here. */
static inline int tg__link_set(struct tg_tuner *u, struct tg_occupant *c, pid_t tid, const char *name, uint64_t seq,
                               int force)
{
    tg_tuner_entry_lock(u);
    const int ok = force || c->raced_tid == 0;
    if (ok) {
        __atomic_store_n(&c->raced_tid, tid, __ATOMIC_RELAXED);
        if (name)
            tg__link_name(c->raced_name, sizeof c->raced_name, name);
        c->race_seq = seq;
    }
    tg_tuner_entry_unlock(u);
    return ok;
}

/* tg__link_set on the slot of u that holds o's session (its thread and
 * entry time), if that session is still inside: o may be a copy (a report
 * reads copies: race_decide.c occupant_copy).  1 when linked here; 0 when
 * the session left, or was linked already and !force. */
static inline int tg__link_session_if(struct tg_tuner *u, const struct tg_occupant *o, pid_t tid, const char *name,
                                      uint64_t seq, int force)
{
    int ok = 0;
    tg_tuner_entry_lock(u);
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        struct tg_occupant *c = &u->occ[i];
        if (o->tid != 0 && u->occ_tid[i] == o->tid && c->tid == o->tid && c->entered_ns == o->entered_ns) {
            ok = force || c->raced_tid == 0;
            if (ok) {
                __atomic_store_n(&c->raced_tid, tid, __ATOMIC_RELAXED);
                if (name)
                    tg__link_name(c->raced_name, sizeof c->raced_name, name);
                c->race_seq = seq;
            }
            break;
        }
    }
    tg_tuner_entry_unlock(u);
    return ok;
}

/* tg__link_session_if, forced. */
static inline void tg__link_session(struct tg_tuner *u, const struct tg_occupant *o, pid_t tid, const char *name,
                                    uint64_t seq)
{
    (void)tg__link_session_if(u, o, tid, name, seq, 1);
}

/* c's link, if it is still to thread if_tid's race: set to new_tid (0:
 * unlinked), its name (NULL: left) and seq.  1 when it was if_tid's. */
static inline int tg__link_update(struct tg_tuner *u, struct tg_occupant *c, pid_t if_tid, pid_t new_tid,
                                  const char *name, uint64_t seq)
{
    tg_tuner_entry_lock(u);
    const int ok = c->raced_tid == if_tid;
    if (ok) {
        __atomic_store_n(&c->raced_tid, new_tid, __ATOMIC_RELAXED);
        if (name)
            tg__link_name(c->raced_name, sizeof c->raced_name, name);
        c->race_seq = seq;
    }
    tg_tuner_entry_unlock(u);
    return ok;
}

/* c's link, read whole: its tid (returned), name and seq. */
static inline pid_t tg__link_read(struct tg_tuner *u, const struct tg_occupant *c, char *name, size_t n,
                                  uint64_t *seq)
{
    tg_tuner_entry_lock(u);
    const pid_t tid = c->raced_tid;
    tg__link_name(name, n, c->raced_name);
    *seq = c->race_seq;
    tg_tuner_entry_unlock(u);
    return tid;
}

/* ---- race_again.c --------------------------------------------------------- */

/* The key of a race decided without its capture (a declared tuner's; an
 * overlap on a tuner that keeps its arguments on itself, without the GIL):
 * t entering inst through g while `other` is inside; 0 when it is not to be
 * kept (verbosity=2, a stack deeper than a report keeps).  others_run:
 * tg__others_run()'s answer, or -1 (asked here).  Runs Python code (the
 * kernel's name: attribute look-ups).  GIL held. */
uint64_t tg__race_key(PyObject *inst, const struct tg_guard *g, const struct tg_thread *t,
                      const struct tg_occupant *other, int serialized, int others_run);
/* A race with this key was emitted before: counted as its repeat, *link and
 * other's link (an occupant of u; other a copy) made as tg__report_race
 * makes them; 1.  0: not seen (key 0 too).  An attached thread; a key made
 * without the GIL looks the two threads' names up (Python code). */
int tg__race_again(uint64_t key, struct tg_thread *t, struct tg_tuner *u, const struct tg_occupant *other,
                   int serialized, struct tg_race_link *link);
/* The race with this key was emitted, written or repeated (ref: its
 * dedup_ref; 0: not kept), or suppressed (supp: the suppression's index + 1),
 * the threads named so.  Attached; the cache under race_again.c's own lock. */
void tg__race_remember(uint64_t key, int serialized, uint32_t ref, int supp, const char *self_name,
                       const char *other_name);
void tg__race_again_atfork_child(void);

/* ---- exception_link.c ----------------------------------------------------- */

/* 1 when an exception of type `type` with traceback tb, raised in a call of
 * g that raced, can be the race's doing: a builtin TypeError, AttributeError
 * or KeyError whose innermost frame is in a tuner's own package (g's method's,
 * or another guarded method's, guard_at(0), guard_at(1), ... until NULL: a
 * subclass's run calls Triton's code).  Never a KeyboardInterrupt,
 * SystemExit, MemoryError, or an exception raised in the program's own
 * frames.  GIL held. */
int tg__exception_from_race(const struct tg_guard *g, PyObject *type, PyObject *tb,
                            const struct tg_guard *(*guard_at)(int i));

/* serialize: waiting for u would close a cycle of waits (path[0..n) from
 * tg_tuner_wait_cycle).  Returns 1 when t should proceed unserialized; under
 * deadlock=abort the process ends here. */
int tg__report_deadlock(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                        struct tg_tuner **path, int n);

/* n threads died inside u (tids dead[], idents ident[]): their holds were
 * released; one report each. */
void tg__report_holders_died(struct tg_thread *t, PyObject *inst, const struct tg_guard *g, const pid_t *dead,
                             const unsigned long *ident, int n);

/* serialize: t has waited waited_ns (wait_timeout) for u; stalled_ns > 0:
 * u's holder has been blocked outside tunerguard that long and t proceeds
 * unserialized (on_wait_timeout=proceed), 0: the wait goes on. */
void tg__report_wait_timeout(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                             uint64_t waited_ns, uint64_t stalled_ns);

/* verbosity>=1: guard g's class attribute is now `qual` defined at file:line
 * (NULLs: unknown).  The caller is busy. */
void tg__report_replaced(struct tg_guard *g, const char *qual, const char *file, const char *line);

/* Is the thread of occupant o (inside a call of guard g) tuning rather than
 * on the fast path of a tuned key?  count_launches 0: launches are no
 * evidence.  C calls only for guards of marked classes; a frame walk for the
 * others (targets= tuners). */
int tg__other_is_tuning(const struct tg_occupant *o, const struct tg_guard *g, int count_launches);

/* u's count of threads inside, read without its entry lock (stored with
 * relaxed atomics under it): a hint, decided again under the lock. */
#define TG_NOCC(u) __atomic_load_n(&(u)->nocc, __ATOMIC_RELAXED)

/* Thread t, not inside u, enters it while others are: is that a low-severity
 * overlap, only to be counted, without looking at any occupant?  At verbosity
 * 0, for a tuner whose tuning methods are marked, when no occupant's evidence
 * bit is set (detectors/tuner_table.h, occ_ev: no bit, no evidence): one load
 * of u's first line.  Not for a tuner that keeps its call's arguments on
 * itself while the GIL is off, as last seen (guard/gil_state.h: one load;
 * a build with a GIL does not load it): every overlap of its calls is a race
 * there, decided by tg__report_race, which asks again.  GIL held. */
static inline int tg__overlap_is_low_severity(const struct tg_tuner *u, const struct tg_guard *g)
{
    return tg_opts.verbosity < 1 && g->marked && __atomic_load_n(&u->occ_ev_all, __ATOMIC_RELAXED) == 0 &&
           (!tg_py.free_threaded || !g->clears_args || tg__gil_on());
}

/* A CUDA hook saw benchmarking evidence (bit: TG_EV_*) in t's unregistered
 * session (guard/session.c, "The unregistered session"): published on t's
 * registry slot for threads entering its tuner, which register the session
 * on its behalf.  Any thread's own hook, without the GIL; reached through
 * cuda/listener.h. */
void tg__lazy_evidence(struct tg_thread *t, uint8_t bit);

/* ---- calling the original (session.c, lazy_session.c) --------------------------- */

typedef PyObject *(*tg__vectorcall_fn)(PyObject *, PyObject *const *, size_t, PyObject *);

/* f: the function (vectorcall guard) or g->orig (descriptor guard). */
static inline PyObject *tg__call_orig_(struct tg_guard *g, PyObject *f, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    if (g->orig_vc)
        return ((tg__vectorcall_fn)g->orig_vc)(f, args, (size_t)nargs, kwnames);
    if (tg_py.PyObject_Vectorcall) /* 3.11+ */
        return tg_py.PyObject_Vectorcall(f, args, (size_t)nargs, kwnames);
    if (g->orig_is_function && tg_py._PyFunction_Vectorcall)
        return tg_py._PyFunction_Vectorcall(f, args, (size_t)nargs, kwnames);
    /* 3.9/3.10: PyObject_Vectorcall is an inline there; this exported
     * helper takes the same vector and kwnames. */
    return tg_py._PyObject_MakeTpCall(tg_py.PyThreadState_Get(), f, args, nargs, kwnames);
}

static inline PyObject *tg__call_orig(struct tg_guard *g, PyObject *f, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames)
{
#ifdef TG_INSITU /* the profile build: the original's cycles, for tg__guard_entry (core/insitu.h) */
    uint64_t s0 = TG_IS_TICKS();
    PyObject *r = tg__call_orig_(g, f, args, nargs, kwnames);
    tg__gthread(tg__self())->insitu_orig = TG_IS_TICKS() - s0;
    return r;
#else
    return tg__call_orig_(g, f, args, nargs, kwnames);
#endif
}

#ifdef TG_INSITU
/* The profile build (core/insitu.h): a guarded call's own cycles, the
 * original's apart.  Nested guarded calls ran inside this one's original and
 * set insitu_orig before it did: what is there now is this call's. */
static inline void tg__insitu_count(struct tg_thread *t, uint64_t is0)
{
    const uint64_t wall = TG_IS_TICKS() - is0;
    tg__insitu_add(t, TG_IS_GCALLS, 1);
    tg__insitu_add(t, TG_IS_GOWN, wall - tg__gthread(t)->insitu_orig);
    tg__insitu_add(t, TG_IS_GORIG, tg__gthread(t)->insitu_orig);
}
#endif

/* ---- detect's unregistered session (lazy_session.c) ----------------------------- */

/* Slots of the registry that say their session showed evidence: an
 * entering thread looks at the registry only while one does. */
extern _Atomic uint32_t tg__lazy_evident;
/* t's slot of the registry, claimed at its first unregistered session: 1,
 * or 0 when the registry is full (t then registers its sessions).  The
 * claim an atomic increment. */
int tg__lazy_slot(struct tg_thread *t);
/* Whether this outermost call may run as detect's unregistered session
 * (guard/session.c's guard_call): a tuned call of a tuner whose tuning methods are guarded,
 * by a thread that is not tuning, with no option that acts on sessions.
 * Not a declared tuner's (targets=, its step named with tuning=): a thread
 * entering its step looks for every call inside it, tuning or not
 * (tg__check_race_at_step).  Nor, while the GIL is off as last seen
 * (guard/gil_state.h: one load, not made on a build with a GIL), a call of
 * a tuner that keeps its call's arguments on itself: every overlap of its
 * calls is a race there (tg__report_race), and one unregistered is not
 * seen.  Claims the thread's registry slot the first time.  GIL held. */
static inline __attribute__((always_inline)) int tg__lazy_eligible(struct tg_guard *g, struct tg_thread *t)
{
    if (!(tg_opts.mode == TG_MODE_DETECT && g->marked && !g->declared && !g->tuning_entry && !g->replacement &&
          t->nheld == 0 &&
          t->depth == 0 && t->tuning == 0 && !tg__gthread(t)->wrapped_busy && tg_opts.verbosity < 1 &&
          !tg_opts.stress && !tg_opts.isolate_tuning && !tg_trace_on &&
          (__atomic_load_n(&g->has_markers, __ATOMIC_RELAXED) > 0 || tg__guard_has_markers(g)) &&
          (!tg_py.free_threaded || !g->clears_args || tg__gil_on())))
        return 0;
    return tg__gthread(t)->lazy_slot > 0 || tg__lazy_slot(t); /* the answers cached: no call */
}

/* An outermost call that registers nothing unless it must.  0: done, *resp
 * is the call's result; 1: it registered, and the caller leaves as a
 * registered session does (session_exit, with *epochp).  GIL held. */
int tg__lazy_call(struct tg_guard *g, struct tg_thread *t, PyObject *inst, PyObject *f, PyObject *const *args,
                   Py_ssize_t nargs, PyObject *kwnames, PyObject **resp, uint32_t *epochp);
/* Thread a's unregistered session on inst becomes a registered one: 1, 2
 * when another thread registered it (the exchange of a->lazy_inst), 0 when
 * the table is full (lazy_session.c).  Attached. */
int tg__lazy_register(struct tg_thread *a, uintptr_t inst);
/* lazy_inst while a thread registers another's session for it (never an
 * object's address). */
#define TG_LAZY_CLAIMED ((uintptr_t)1)
/* Register the evident unregistered sessions inside inst for their threads,
 * before t enters it.  Attached; slots claimed meanwhile may be skipped. */
void tg__lazy_adopt(uintptr_t inst, const struct tg_thread *t);
/* The owner's session ended: its slot no longer speaks for it.  GIL held. */
void tg__lazy_clear(struct tg_thread *t);
void tg__lazy_atfork_child(void);
/* The tuner table is full (tg_tuner_get gave NULL): said once (an exchange). */
void tg__table_full(void);

#endif
