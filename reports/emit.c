/* The report pipeline; see reports/emit.h. */
#include "reports/emit.h"
#include "core/options.h"
#include "core/py_api.h"
#include "reports/py_stack.h"
#include "reports/report.h"
#include "reports/suppress_load.h"
#include "reports/trace.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tg_report report; /* the one record of GIL-held reporters, under report_mu */

static struct tg_emit_stats stats; /* every field updated atomically */
static void (*halt_fn)(void);

/* De-duplication of reports of TG_KIND_DEDUP kinds: (instance, code
 * locations, seen_at) -> seen.  Those are emitted under the report lock. */
#define TG_DEDUP_SLOTS 1024
static uint64_t dedup[TG_DEDUP_SLOTS];

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

/* 1 when r repeats a report written before (then nothing is recorded). */
static int seen_before(const struct tg_report *r)
{
    uint64_t salt = r->seen_at_exit ? 0x5EE1A7E417ull : 0;
    uint64_t h = tg_py_frames_hash(&r->entering, 6) ^ (tg_py_frames_hash(&r->inside, 3) * 31) ^
                 ((uint64_t)r->instance * 0x9E3779B97F4A7C15ull) ^ salt;
    h |= 1;
    unsigned slot = (unsigned)(h >> 40) & (TG_DEDUP_SLOTS - 1);
    for (unsigned probe = 0; probe < TG_DEDUP_SLOTS; probe++, slot = (slot + 1) & (TG_DEDUP_SLOTS - 1)) {
        if (dedup[slot] == h)
            return 1;
        if (dedup[slot] == 0) {
            dedup[slot] = h;
            break;
        }
    }
    return 0;
}

static void halt(void)
{
    if (halt_fn)
        halt_fn();
    _exit(tg_opts.exitcode >= 0 ? tg_opts.exitcode : 66);
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
    if (k->supp && tg_supp_check(r)) {
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
    if ((k->flags & TG_KIND_DEDUP) && seen_before(r)) {
        *status = TG_EMIT_REPEAT;
        return 0;
    }
    add(prevented ? &stats.prevented : &stats.written[r->kind], (uint64_t)counted);
    if (!counts)
        add(&stats.prevented_reports, 1);
    r->seq = __atomic_add_fetch(&stats.reports, 1, __ATOMIC_RELAXED);
    *status = TG_EMIT_WRITTEN;
    tg_sink_emit(r);
    if (k->flags & TG_KIND_TRACE)
        tg_trace_race(r); /* no-op unless trace=1 */
    if (((k->flags & TG_KIND_HALT_RACE) && tg_opts.halt_on_race && r->high_severity && counts) ||
        ((k->flags & TG_KIND_HALT_ABORT) && tg_opts.deadlock == TG_DEADLOCK_ABORT))
        halt();
    return r->seq;
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
    for (int i = 0; i < TG_REPORT_NKINDS; i++)
        out->written[i] = __atomic_load_n(&stats.written[i], __ATOMIC_RELAXED);
    out->races_seen = __atomic_load_n(&stats.races_seen, __ATOMIC_RELAXED);
    out->overlaps = __atomic_load_n(&stats.overlaps, __ATOMIC_RELAXED);
    out->prevented = __atomic_load_n(&stats.prevented, __ATOMIC_RELAXED);
    out->prevented_seen = __atomic_load_n(&stats.prevented_seen, __ATOMIC_RELAXED);
    out->prevented_reports = __atomic_load_n(&stats.prevented_reports, __ATOMIC_RELAXED);
    out->reports = __atomic_load_n(&stats.reports, __ATOMIC_RELAXED);
}

uint64_t *tg_emit_seq_counter(void)
{
    return &stats.reports;
}

void tg_emit_atfork_child(void)
{
    memset(&stats, 0, sizeof stats);
    memset(dedup, 0, sizeof dedup);
}
