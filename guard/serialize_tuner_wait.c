/* serialize's wait for a tuner's lock (detectors/tuner_table.h, "The
 * lock"): blocked with the GIL released until the lock is t's, a cycle of
 * waits found and reported (deadlock=), the holds of threads that died
 * inside released, the holder looked at once a second past wait_timeout
 * (running, or blocked outside tunerguard), and the main thread's signal
 * handlers run every 50 ms.  What every wait does (queueing, blocked
 * stretches, interruption, the counts) is guard/serialize_wait.c; the
 * guarded call that waits is guard/session.c.
 *
 * Everything here runs with the GIL held, except the blocked stretches
 * (tg__park_until); the reports it makes run Python code.  Allocates
 * nothing; not signal-safe. */
#include "guard/serialize_wait.h"
#include "guard/serialize_wait_internal.h"
#include "guard/gil_state.h"
#include "core/clock.h"
#include "core/options.h"
#include "core/park.h"
#include "core/py_attr.h"
#include "core/thread_state.h"
#include "reports/trace.h"

#include <errno.h>
#include <time.h>

/* Release the holds (occupancy, the lock) of threads that died inside u, and
 * report each.  Returns how many holds were released.  GIL held. */
int tg__reap_dead(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
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

/* Is u's holder running?  What a waiter past wait_timeout looks at, once a
 * second, to tell a holder that is busy (benchmarking, compiling) from one
 * blocked outside tunerguard, in a wait of the program's that may need the
 * waiter itself (a threading.Lock the waiter holds): tunerguard cannot see
 * that cycle.  The holder's CPU time (its thread's CPU clock, as
 * pthread_getcpuclockid makes it, from its tid) and its last CUDA call
 * (seq; inside: blocked in the driver is running, on the GPU). */
struct holder_look {
    pid_t tid;        /* 0: no look yet */
    uint64_t cpu_ns;
    uint32_t cuda_seq;
    uint64_t at;      /* when (tg_mono_ns) */
    uint64_t since;   /* blocked since then: the first of the looks that saw it idle */
};

static int thread_cpu_ns(pid_t tid, uint64_t *ns)
{
    struct timespec ts; /* Linux: CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED of tid */
    if (clock_gettime((clockid_t)((~(unsigned)tid << 3) | 6u), &ts) != 0)
        return -1;
    *ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return 0;
}

/* One look at u's holder, now; returns how long it has been blocked outside
 * tunerguard (ns; 0: running, unknown, or not blocked since the last look):
 * used under 1 % of a CPU since the last look, made no CUDA call, is in no
 * driver call and in no wait of tunerguard's (those are seen: a cycle, a
 * holder that died).  GIL held (the holder's record stays while it holds). */
static uint64_t holder_blocked_ns(struct tg_tuner *u, struct tg_thread *t, struct holder_look *lk, uint64_t now)
{
    struct tg_occupant oc;
    const struct tg_occupant *o = tg_tuner_other(u, t, &oc);
    struct holder_look cur = {0, 0, 0, now, now};
    if (!o || !o->thread || thread_cpu_ns(o->tid, &cur.cpu_ns) != 0) {
        *lk = (struct holder_look){0};
        return 0;
    }
    const struct tg_thread *h = o->thread;
    cur.tid = o->tid;
    cur.cuda_seq = __atomic_load_n(&h->last.seq, __ATOMIC_ACQUIRE);
    const int busy = __atomic_load_n(&h->last.inside, __ATOMIC_RELAXED) ||
                     __atomic_load_n(&h->waiting_for, __ATOMIC_ACQUIRE) != NULL;
    const int idle = !busy && lk->tid == cur.tid && cur.cuda_seq == lk->cuda_seq &&
                     (cur.cpu_ns - lk->cpu_ns) * 100 < now - lk->at;
    if (idle)
        cur.since = lk->since;
    *lk = cur;
    return idle ? now - cur.since : 0;
}

/* The entry of inst that t waits for, again, where a guarded call made
 * inside the wait took t out of its FIFO (tg__wait_away_begin) and Python
 * code ran since: an entry nobody was inside or waiting for meanwhile may
 * have been given back (tg_tuner_get), so it is looked up before t queues
 * in it again.  NULL: the table is full.  GIL held. */
static struct tg_tuner *entry_again(struct tg_tuner *u, struct tg_thread *t, PyObject *inst)
{
    if (__builtin_expect(!tg__gthread(t)->wait_left, 1))
        return u;
    struct tg_tuner *v = tg_tuner_get((uintptr_t)inst);
    tg__gthread(t)->wait_lock = v;
    __atomic_store_n(&t->waiting_for, (void *)v, __ATOMIC_RELEASE); /* read by the wait graph, others' checks */
    if (!v)
        tg__gthread(t)->wait_left = 0;
    return v;
}

/* t's wait for u has lasted wait_timeout (waited_ns), and u's holder has
 * been blocked outside tunerguard for blocked_ns (0: it runs): report it,
 * once while the wait goes on (*reported), and once more as t proceeds.
 * Returns 1 when t proceeds unserialized (on_wait_timeout=proceed and the
 * holder blocked), 0 when the wait goes on.  GIL held; runs Python code. */
static int past_wait_timeout(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g,
                             uint64_t waited_ns, uint64_t blocked_ns, int *reported)
{
    const int proceed = blocked_ns > 0 && tg_opts.on_wait_timeout == TG_WAIT_END_PROCEED;
    if (*reported && !proceed)
        return 0;
    *reported = 1;
    tg__report_wait_timeout(u, t, inst, g, waited_ns, proceed ? blocked_ns : 0);
    return proceed;
}

/* Serialize: block until t holds u's lock (detectors/tuner_table.h, "The
 * lock").  GIL held on entry and exit, released while blocked.  Returns 1
 * when t holds the lock, 0 when t proceeds unserialized (a cycle of waits
 * was found and deadlock=proceed, or past wait_timeout the holder is blocked
 * outside tunerguard and on_wait_timeout=proceed), -1 when a signal handler
 * raised (Ctrl-C: KeyboardInterrupt is set; the wait was abandoned, nothing
 * held).
 *
 * Blocked, the thread parks on its own word and, when woken, takes the lock
 * right there, before it asks for the GIL back (as a threading.Lock
 * does).  It wakes by itself every second to release the holds of threads
 * that died inside, to look at the holder (holder_blocked_ns) and to report
 * a wait longer than wait_timeout (past_wait_timeout); the main
 * thread every 50 ms as well, to run Python's signal handlers (a signal
 * delivered to another thread does not interrupt its wait), so Ctrl-C ends
 * the wait within that. */
int tg__wait_for_tuner(struct tg_tuner *u, struct tg_thread *t, PyObject *inst, const struct tg_guard *g)
{
    const uint32_t tid = (uint32_t)t->tid;
    /* In the FIFO, u stays this instance's entry while Python code runs below
     * (reports, audit hooks), which lets other threads leave and enter. */
    tg__fifo_join(u, t);
    __atomic_store_n(&t->waiting_for, (void *)u, __ATOMIC_RELEASE);
    uint64_t t0 = tg_mono_ns();
    struct tg_tuner *path[16];
    int n = tg_tuner_wait_cycle(u, t, path, 16);
    if (n > 0 && tg__report_deadlock(u, t, inst, g, path, n) && !tg_tuner_try_lock(u, tid)) {
        tg__abandon_wait(u, t);
        return 0;
    }
    pid_t holder_tid = tg_tuner_other_tid(u, t); /* read under the entry lock: its slot may change */
    if (!holder_tid)
        holder_tid = (pid_t)__atomic_load_n(&u->owner, __ATOMIC_RELAXED);
    tg__wait_begin(t, t0);
    /* Tell observers (the reproducers' barriers) that this thread is about to
     * block in tunerguard rather than run.  Only on contention. */
    tg__program_code_begin(t); /* a guarded call from an audit hook here waits as a call of its own */
    tg_py.PySys_Audit("tunerguard.serialize_wait", "(k)", (unsigned long)holder_tid);
    tg__program_code_end(t);
    tg_py_drop_error();
    if (tg_py.free_threaded)
        tg__gil_refresh(); /* a wait: the GIL's state asked again for the turn (guard/gil_state.h) */
    if (!__atomic_load_n(&u->noted, __ATOMIC_RELAXED) && !__atomic_exchange_n(&u->noted, 1, __ATOMIC_RELAXED)) {
        /* once per tuner (one of its waiters): it reads Python attributes */
        tg__note_contended(t, inst, g ? g->method : NULL);
    }
    if (__builtin_expect(tg_trace_on, 0))
        tg_trace_wait_begin(t, holder_tid, (uintptr_t)inst);
    if (tg__wait_interrupted(u, t, 0, 0, t0)) /* in the Python code above, or the report before the wait */
        return -1;
    const int main_thread = t->is_main; /* signal handlers run there */
    const uint64_t slice = main_thread ? 50000000ull : 1000000000ull;
    const uint64_t deadline = t0 + (uint64_t)tg_opts.wait_timeout * 1000000000ull;
    uint64_t last_reap = t0;
    /* on_wait_timeout=proceed: the holder is looked at from two seconds
     * before the deadline (none on a short wait's path), so that at the
     * deadline a look a second old tells whether it is blocked; without one
     * the verdict waits a look. */
    const int looks = tg_opts.on_wait_timeout == TG_WAIT_END_PROCEED;
    struct holder_look look = {0};
    int timed_out = 0, rc;
    for (;;) {
        if (!(u = entry_again(u, t, inst))) {
            tg__wait_done(NULL, t, t0);
            return 0; /* the table is full: the call runs unguarded (guard/session.c) */
        }
        if (tg__park_until(u, t, tg_mono_ns() + slice, t0, 0, &rc))
            break;
        if (tg__wait_interrupted(u, t, rc, main_thread, t0))
            return -1;
        uint64_t now = tg_mono_ns();
        if (now - last_reap >= 1000000000ull) {
            last_reap = now;
            tg__reap_dead(u, t, inst, g, tg_tid_alive);
            const int had_look = look.tid != 0;
            const uint64_t blocked =
                looks && now + 2000000000ull >= deadline ? holder_blocked_ns(u, t, &look, now) : 0;
            const int go = now >= deadline && (had_look || !looks) &&
                           past_wait_timeout(u, t, inst, g, now - t0, blocked, &timed_out);
            if (tg__wait_interrupted(u, t, 0, 0, t0)) /* in those reports' Python code */
                return -1;
            if (go) {
                tg__abandon_wait(u, t); /* proceeds unserialized, as past a cycle of waits */
                tg__wait_done(u, t, t0);
                return 0;
            }
        }
    }
    tg_tuner_served(u, tg_mono_ns() - t0);
    tg__fifo_leave(u, t);
    __atomic_store_n(&t->waiting_for, (void *)NULL, __ATOMIC_RELEASE);
    tg__wait_done(u, t, t0);
    return 1;
}
