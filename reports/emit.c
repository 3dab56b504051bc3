/* The report pipeline; see reports/emit.h. */
#include "reports/emit.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/options.h"
#include "core/process.h"
#include "core/py_api.h"
#include "core/thread_hold.h"
#include "reports/py_stack.h"
#include "reports/report.h"
#include "reports/report_internal.h"
#include "reports/stack_fold.h"
#include "reports/suppress_load.h"
#include "reports/trace.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tg_report report; /* the one record of GIL-held reporters, under report_mu */

static struct tg_emit_stats stats; /* every field updated atomically */
static void (*halt_fn)(void); /* written at activation */

/* De-duplication of reports of TG_KIND_DEDUP kinds, by what a person calls
 * one bug: the kernel's name, the tuner's class and the call sites into it
 * of both threads (the SUMMARY line's frame, reports/report_internal.h),
 * seen_at, and whether a serialize wait prevented it.  Not the instance: a
 * program that builds its tuner inside a function makes a new one every
 * call (one call site gave 11,450 reports of one kernel in 18 s).  Where
 * the thread inside happened to be (torch's synchronize, clear_cache,
 * Event.record, ...) is not part of it: on an H200 one race of the hammer
 * scenario gave 21 reports that differed only there.  A slot keeps the seq
 * of the report written and the repeats, written at exit as one "repeats"
 * record each (tg_emit_flush_repeats).  A tuning under load is one report
 * per tuner class and kernel, whatever the call sites: 4 to 8 benchmarks of one
 * kernel are timed under load where one is.  Under dedup_mu: interference
 * reports come without the report lock. */
#define TG_DEDUP_SLOTS 1024
static struct dedup_slot {
    uint64_t h;          /* 0: free */
    uint64_t seq;        /* the report written for it */
    uint64_t repeats;    /* seen again since */
    char kernel[128];    /* as long as tg_report.kernel: compared whole */
    char method[64];     /* as tg_report.method */
    enum tg_report_kind kind;
    int declared;        /* the report's tuner was declared (targets=) */
    int prevented;       /* a race serialize prevented (its repeats say so) */
} dedup[TG_DEDUP_SLOTS];
static pthread_mutex_t dedup_mu = PTHREAD_MUTEX_INITIALIZER;

/* A race that serialize prevented is one report per pair of call sites,
 * whatever the tuner: a model's forward makes its threads wait on every
 * kernel it tunes (ten on an fla GatedDeltaNet), all from one line of the
 * program, and nothing happened to any of them.  The other kernels seen
 * again at those sites are kept for the repeats record: which, and how
 * many.  A few such slots exist; past them the repeats are still counted. */
#define TG_OTHERS_SLOTS 32
static struct others {
    unsigned slot;                           /* dedup slot + 1; 0 free */
    int n;                                   /* distinct kernels besides the slot's */
    uint64_t h[TG_OTHER_KERNELS_KEPT];       /* their names' hashes */
    char names[3][128];                      /* the first of them */
} others[TG_OTHERS_SLOTS];

static uint64_t name_hash(const char *s)
{
    return tg_hash_str(TG_HASH_SEED, s) | 1;
}

static int is_prevented(const struct tg_report *r)
{
    return r->serialized && (unsigned)r->kind < TG_REPORT_NKINDS &&
           (tg_report_kinds[r->kind].flags & TG_KIND_PREVENTED);
}

/* Slot d (a prevented race) seen again for r's kernel.  Under dedup_mu. */
static void note_other_kernel(const struct dedup_slot *d, const struct tg_report *r)
{
    if (strcmp(r->kernel, d->kernel) == 0)
        return;
    const unsigned ref = (unsigned)(d - dedup) + 1;
    struct others *o = NULL;
    for (int i = 0; i < TG_OTHERS_SLOTS && !o; i++)
        if (others[i].slot == ref)
            o = &others[i];
    for (int i = 0; i < TG_OTHERS_SLOTS && !o; i++)
        if (others[i].slot == 0) {
            o = &others[i];
            o->slot = ref;
        }
    if (!o)
        return;
    const uint64_t h = name_hash(r->kernel);
    for (int i = 0; i < o->n && i < TG_OTHER_KERNELS_KEPT; i++)
        if (o->h[i] == h)
            return;
    if (o->n >= TG_OTHER_KERNELS_KEPT)
        return; /* told apart no further: "at least" */
    if (o->n < 3)
        snprintf(o->names[o->n], sizeof o->names[0], "%s", r->kernel);
    o->h[o->n++] = h;
}

void tg_report_lock(void)
{
    if (pthread_mutex_trylock(&report_mu) == 0)
        return;
    PyThreadState *ts = tg_py.PyEval_SaveThread();
    struct tg_thread *t = tg__self();
    tg_hold_wait_begin(t); /* a parking point: a report may read this thread's stack meanwhile */
    pthread_mutex_lock(&report_mu);
    tg_hold_wait_end(t);
    tg_py.PyEval_RestoreThread(ts);
}

void tg_report_unlock(void)
{
    pthread_mutex_unlock(&report_mu);
}

void tg_report_head(struct tg_report *r, enum tg_report_kind kind)
{
    r->kind = kind;
    r->pid = getpid();
    r->rank = tg_proc_rank();
    r->mode = tg_mode_name(tg_opts.mode);
    r->ts_ns = tg_mono_ns();
}

struct tg_report *tg_report_begin(struct tg_thread *t)
{
    tg_report_lock();
    t->busy++;
    memset(&report, 0, sizeof report);
    return &report;
}

void tg_report_end(struct tg_thread *t)
{
    t->busy--;
    tg_report_unlock();
}

static void add(uint64_t *counter, uint64_t n)
{
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

/* A thread's call site (tg_site_frame): its frame in the program below
 * the tuner, else the first outside the tuner. */
static uint64_t site_hash(uint64_t h, const struct tg_report *r, const struct tg_thread_view *v)
{
    int i = tg_site_frame(r, v);
    if (i < 0)
        return tg_hash_u64(h, 0); /* no Python frame: the tuner alone */
    return tg_hash_u64(tg_hash_str(h, v->py[i].file), (uint32_t)v->py[i].line);
}

/* The slot of r's bug; *repeat 1 when a report was written for it before. */
static struct dedup_slot *dedup_slot(const struct tg_report *r, int *repeat)
{
    uint64_t h = (TG_HASH_SEED ^ (r->seen_at_exit ? 0x5EE1A7E417ull : 0) ^ (r->seen_at_step ? 0x57E9ull : 0) ^
                  (r->seen_at_tuning ? 0x7E417ull : 0) ^ (r->without_gil ? 0x6170FFull : 0)) +
                 (uint64_t)r->kind * 0x100000001B3ull;
    h ^= r->serialized ? 0x9E3F7E47EDull : 0; /* a prevented race repeats prevented ones only */
    if (r->kind == TG_REPORT_EXCEPTION && r->race_seq) {
        /* exceptions: one block per race they follow, the rest counted */
        h = tg_hash_u64(h, r->race_seq ^ 0xE1CE97ull);
    } else if (r->kind != TG_REPORT_INTERFERENCE) { /* interference: the tuner and kernel alone */
        h = site_hash(h, r, &r->entering);
        h = site_hash(h * 31, r, &r->inside);
    }
    if (!is_prevented(r)) { /* a prevented race: the call sites alone (others, above) */
        h = tg_hash_u64(tg_hash_str(h, r->tuner_class), 0xC1A55ull); /* the class ends here, the kernel begins */
        h = tg_hash_str(h, r->kernel);
    }
    h |= 1;
    *repeat = 0;
    unsigned slot = (unsigned)(h >> 40) & (TG_DEDUP_SLOTS - 1);
    for (unsigned probe = 0; probe < TG_DEDUP_SLOTS; probe++, slot = (slot + 1) & (TG_DEDUP_SLOTS - 1)) {
        struct dedup_slot *d = &dedup[slot];
        if (d->h == h) {
            *repeat = 1;
            return d;
        }
        if (d->h == 0) {
            d->h = h;
            return d;
        }
    }
    return NULL; /* full: written, not counted */
}

void tg_emit_flush_repeats(void)
{
    static struct tg_report rep; /* big: not on the stack; at exit, one thread */
    for (unsigned i = 0; i < TG_DEDUP_SLOTS; i++) {
        struct dedup_slot *d = &dedup[i];
        if (!d->h || !d->repeats || !d->seq)
            continue;
        memset(&rep, 0, sizeof rep);
        tg_report_head(&rep, TG_REPORT_REPEATS);
        rep.race_seq = d->seq;
        rep.repeats = d->repeats;
        rep.repeat_of = d->kind;
        snprintf(rep.kernel, sizeof rep.kernel, "%s", d->kernel);
        snprintf(rep.method, sizeof rep.method, "%s", d->method);
        rep.declared = d->declared;
        rep.serialized = d->prevented;
        for (int k = 0; k < TG_OTHERS_SLOTS; k++)
            if (others[k].slot == i + 1) {
                rep.other_kernels = others[k].n;
                memcpy(rep.other_names, others[k].names, sizeof rep.other_names);
            }
        rep.seq = __atomic_add_fetch(&stats.reports, 1, __ATOMIC_RELAXED);
        add(&stats.repeat_records, 1);
        tg_sink_emit(&rep);
        d->repeats = 0; /* once */
    }
}

static void halt(void)
{
    if (halt_fn)
        halt_fn();
    _exit(tg_opts.exitcode >= 0 ? tg_opts.exitcode : 66);
}

/* The halt after report r of kind k when its kind's option says so (counts:
 * not a race a wait prevented, unless prevented_is_race=1). */
static void halt_if(const struct tg_report *r, const struct tg_report_kind_info *k, int counts)
{
    if (((k->flags & TG_KIND_HALT_RACE) && tg_opts.halt_on_race && r->high_severity && counts) ||
        ((k->flags & TG_KIND_HALT_ABORT) && tg_opts.deadlock == TG_DEADLOCK_ABORT))
        halt();
}

/* Whether a slot holds an interference report of kernel name k (the exit
 * line counts kernels by name: one kernel of several tuner classes, or past
 * report_cap, is one).  Under dedup_mu; called once per slot taken. */
static int kernel_named_before(const struct dedup_slot *self, const char *k)
{
    for (const struct dedup_slot *d = dedup; d < dedup + TG_DEDUP_SLOTS; d++)
        if (d != self && d->h && d->kind == TG_REPORT_INTERFERENCE && strcmp(d->kernel, k) == 0)
            return 1;
    return 0;
}

uint64_t tg_emit(struct tg_report *r, enum tg_emit_status *status)
{
    enum tg_emit_status dummy;
    if (!status)
        status = &dummy;
    if ((unsigned)r->kind >= TG_REPORT_NKINDS) {
        *status = TG_EMIT_SUPPRESSED; /* no such kind: nothing to write */
        return 0;
    }
    const struct tg_report_kind_info *k = &tg_report_kinds[r->kind];
    if (k->supp && (r->supp_ref = (uint32_t)tg_supp_check_ref(r)) != 0) {
        *status = TG_EMIT_SUPPRESSED;
        return 0;
    }
    /* serialize: a race the wait prevented is counted apart, and neither
     * halts nor sets the exit status unless prevented_is_race=1. */
    const int prevented = (k->flags & TG_KIND_PREVENTED) && r->serialized;
    const int counts = !prevented || tg_opts.prevented_is_race;
    int counted = 1;
    if (k->flags & TG_KIND_SEVERITY) {
        counted = r->high_severity;
        if (!r->high_severity) {
            add(&stats.overlaps, 1);
            if (tg_opts.verbosity < 1) {
                *status = TG_EMIT_HIDDEN;
                return 0;
            }
        }
        add(prevented ? &stats.prevented_seen : &stats.races_seen, (uint64_t)r->high_severity);
    }
    add(&stats.seen[r->kind], 1);
    const int dedupe = (k->flags & TG_KIND_DEDUP) && tg_opts.verbosity < 2; /* verbosity=2: every occurrence */
    struct dedup_slot *d = NULL;
    int new_kernel = 1; /* an interference report of a kernel no report named before */
    if (dedupe) {
        int repeat;
        pthread_mutex_lock(&dedup_mu);
        d = dedup_slot(r, &repeat);
        r->dedup_ref = d ? (uint32_t)(d - dedup) + 1 : 0;
        if (repeat) {
            d->repeats++;
            if (is_prevented(r))
                note_other_kernel(d, r);
            pthread_mutex_unlock(&dedup_mu);
            *status = TG_EMIT_REPEAT;
            return 0;
        }
        if (d) {
            if (r->kind == TG_REPORT_INTERFERENCE)
                new_kernel = !kernel_named_before(d, r->kernel);
            d->kind = r->kind;
            d->declared = r->declared;
            d->prevented = is_prevented(r);
            snprintf(d->kernel, sizeof d->kernel, "%s", r->kernel);
            snprintf(d->method, sizeof d->method, "%s", r->method);
        }
    }
    if (r->kind == TG_REPORT_INTERFERENCE && new_kernel)
        add(&stats.load_kernels, 1);
    if (tg_report_fails(r->kind, r->serialized, !counted, tg_opts.prevented_is_race))
        add(&stats.failing, 1); /* written or past report_cap: exitcode= all the same */
    /* report_cap: past it, a report is counted, not written (its repeats
     * too, in its slot, without a record at exit). */
    const uint64_t cap = tg_opts.report_cap > 0 ? (uint64_t)tg_opts.report_cap : 0;
    if (cap && __atomic_load_n(&stats.reports, __ATOMIC_RELAXED) >= cap) {
        if (dedupe)
            pthread_mutex_unlock(&dedup_mu);
        add(&stats.capped, 1);
        *status = TG_EMIT_CAPPED;
        halt_if(r, k, counts);
        return 0;
    }
    add(prevented ? &stats.prevented : &stats.written[r->kind], (uint64_t)counted);
    if (!counts)
        add(&stats.prevented_reports, 1);
    r->seq = __atomic_add_fetch(&stats.reports, 1, __ATOMIC_RELAXED);
    if (d)
        d->seq = r->seq;
    if (dedupe)
        pthread_mutex_unlock(&dedup_mu);
    *status = TG_EMIT_WRITTEN;
    tg_sink_emit(r);
    if (k->flags & TG_KIND_TRACE)
        tg_trace_race(r); /* no-op unless trace=1 */
    halt_if(r, k, counts);
    return r->seq;
}

/* The counts of a repeat, as tg_emit makes them. */
void tg_emit_again(uint32_t ref, enum tg_report_kind kind, int high, int serialized)
{
    if ((unsigned)kind >= TG_REPORT_NKINDS)
        return;
    const struct tg_report_kind_info *k = &tg_report_kinds[kind];
    const int prevented = (k->flags & TG_KIND_PREVENTED) && serialized;
    if (k->flags & TG_KIND_SEVERITY) {
        if (!high)
            add(&stats.overlaps, 1);
        add(prevented ? &stats.prevented_seen : &stats.races_seen, (uint64_t)high);
    }
    add(&stats.seen[kind], 1);
    pthread_mutex_lock(&dedup_mu);
    if (ref >= 1 && ref <= TG_DEDUP_SLOTS && dedup[ref - 1].h)
        dedup[ref - 1].repeats++;
    pthread_mutex_unlock(&dedup_mu);
}

void tg_emit_count_overlap(void)
{
    add(&stats.overlaps, 1);
}

void tg_emit_set_halt(void (*fn)(void))
{
    halt_fn = fn;
}

void tg_emit_stats(struct tg_emit_stats *out)
{
    for (int i = 0; i < TG_REPORT_NKINDS; i++) {
        out->written[i] = __atomic_load_n(&stats.written[i], __ATOMIC_RELAXED);
        out->seen[i] = __atomic_load_n(&stats.seen[i], __ATOMIC_RELAXED);
    }
    out->failing = __atomic_load_n(&stats.failing, __ATOMIC_RELAXED);
    out->races_seen = __atomic_load_n(&stats.races_seen, __ATOMIC_RELAXED);
    out->overlaps = __atomic_load_n(&stats.overlaps, __ATOMIC_RELAXED);
    out->prevented = __atomic_load_n(&stats.prevented, __ATOMIC_RELAXED);
    out->prevented_seen = __atomic_load_n(&stats.prevented_seen, __ATOMIC_RELAXED);
    out->prevented_reports = __atomic_load_n(&stats.prevented_reports, __ATOMIC_RELAXED);
    out->repeat_records = __atomic_load_n(&stats.repeat_records, __ATOMIC_RELAXED);
    out->capped = __atomic_load_n(&stats.capped, __ATOMIC_RELAXED);
    out->load_kernels = __atomic_load_n(&stats.load_kernels, __ATOMIC_RELAXED);
    out->reports = __atomic_load_n(&stats.reports, __ATOMIC_RELAXED);
}

uint64_t *tg_emit_seq_counter(void)
{
    return &stats.reports;
}

void tg_emit_atfork_child(void)
{
    /* A thread of the parent may have held the report lock at the fork: the
     * child has only the forking thread, so nobody would ever unlock it. */
    pthread_mutex_init(&report_mu, NULL);
    pthread_mutex_init(&dedup_mu, NULL);
    memset(&stats, 0, sizeof stats);
    memset(dedup, 0, sizeof dedup);
    memset(others, 0, sizeof others);
}
