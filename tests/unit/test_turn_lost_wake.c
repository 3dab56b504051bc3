/* The turn's lost wake-up at a slice's end: a quiet holder's release read
 * the clock just inside its slice, then stored owner = 0 just after the
 * parked head's timed wake at the slice's end found the turn still taken.
 * The head then parked until its deadline (the 100 ms bypass) with the turn
 * free; now it looks again a slice later (park_until).  Failed (100 ms)
 * before that fix; the control and the looping case bound the same waits
 * without the race.
 *
 * The GIL is a mutex here (PyEval_SaveThread / RestoreThread); the window
 * between the holder's clock read and its unlock is widened by a clock that
 * stalls once, after it read the time, on the holder's thread (a preempted
 * holder). */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/py_api.h"
#include "core/thread_state.h"
#include "detectors/tuner_table.h"
#include "shim/serialize_wait.h"

static __thread long stall_ns; /* one-shot: the next clock read stalls this long after reading */

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int rc = (int)syscall(SYS_clock_gettime, clk, ts);
    if (stall_ns && clk == CLOCK_MONOTONIC) {
        struct timespec s = {0, stall_ns};
        stall_ns = 0;
        while (syscall(SYS_nanosleep, &s, &s) != 0)
            ;
    }
    return rc;
}

static pthread_mutex_t gil = PTHREAD_MUTEX_INITIALIZER;
static PyThreadState *save_thread(void)
{
    pthread_mutex_unlock(&gil);
    return (PyThreadState *)&gil;
}
static void restore_thread(PyThreadState *ts)
{
    (void)ts;
    pthread_mutex_lock(&gil);
}
static int audit(const char *e, const char *f, ...)
{
    (void)e;
    (void)f;
    return 0;
}
static void err_clear(void) {}
static int check_signals(void) { return 0; }

static void setup(void)
{
    memset(&tg__turn, 0, sizeof tg__turn);
    tg_py.PyEval_SaveThread = save_thread;
    tg_py.PyEval_RestoreThread = restore_thread;
    tg_py.PySys_Audit = audit;
    tg_py.PyErr_Clear = err_clear;
    tg_py.PyErr_CheckSignals = check_signals;
}
TestSuite(turn_lost_wake, .init = setup);

static struct tg_thread *_Atomic waiter_rec;
static _Atomic uint64_t waited_ns;
static _Atomic int waiter_got;

static void *waiter(void *p)
{
    (void)p;
    pthread_mutex_lock(&gil);
    struct tg_thread *t = tg__self();
    atomic_store(&waiter_rec, t);
    uint64_t t0 = tg_mono_ns();
    waiter_got = tg__wait_for_turn(t, (PyObject *)(uintptr_t)0x1230); /* no such tuner in the table */
    waited_ns = tg_mono_ns() - t0;
    tg__release_turn(t);
    pthread_mutex_unlock(&gil);
    return NULL;
}

static void sleep_until(uint64_t when)
{
    uint64_t now;
    while ((now = tg_mono_ns()) < when) {
        struct timespec s = {0, (long)(when - now)};
        nanosleep(&s, NULL);
    }
}

/* The holder (this thread, quiet) gives the turn up 1 ms before its slice
 * ends and then stops calling.  stall: how long its release stalls between
 * its clock read and its unlock.  Returns how long the head waited. */
static uint64_t run(long stall)
{
    struct tg_thread *h = tg__self();
    pthread_mutex_lock(&gil);
    h->turn_short = TG_TURN_QUIET_AFTER; /* quiet: back-to-back calls so far */
    h->turn_released_ns = 0;
    cr_assert(tg__try_turn(h));
    atomic_store(&waiter_rec, NULL);
    pthread_t w;
    pthread_create(&w, NULL, waiter, NULL);
    /* Until the waiter is the FIFO's head, parked (the GIL released). */
    for (;;) {
        pthread_mutex_unlock(&gil);
        usleep(200);
        pthread_mutex_lock(&gil);
        struct tg_thread *wt = atomic_load(&waiter_rec);
        if (wt && tg__turn.wq_head == wt)
            break;
    }
    uint64_t end = tg__turn.slice_end;
    pthread_mutex_unlock(&gil);
    sleep_until(end - 1000000); /* 1 ms before the slice's end */
    pthread_mutex_lock(&gil);
    stall_ns = stall;
    tg__release_turn(h); /* inside its slice, quiet: wakes nobody */
    cr_assert_eq(stall_ns, 0, "the release read the clock");
    pthread_mutex_unlock(&gil);
    /* ... and the holder stops calling. */
    pthread_join(w, NULL);
    cr_assert(waiter_got, "the head got the turn");
    return waited_ns;
}

Test(turn_lost_wake, control_no_stall_head_waits_about_a_slice)
{
    uint64_t dt = run(0);
    cr_log_info("head waited %.1f ms", dt / 1e6);
    cr_assert_lt(dt, 3 * TG_TURN_SLICE_NS, "head waited %.1f ms", dt / 1e6);
}

Test(turn_lost_wake, stalled_release_head_waits_about_a_slice)
{
    uint64_t dt = run(3000000); /* 3 ms: the head's timed wake at the slice's end falls inside */
    cr_log_info("head waited %.1f ms", dt / 1e6);
    cr_assert_lt(dt, 3 * TG_TURN_SLICE_NS, "head waited %.1f ms for a free turn (bypass bound %.0f ms)",
                 dt / 1e6, TG_TURN_BYPASS_NS / 1e6);
}

/* Soundness check: a quiet holder calling back to back for 60 ms keeps a
 * waiter out about a slice, not longer. */
static _Atomic int loop_stop;
static void *looper(void *p)
{
    (void)p;
    struct tg_thread *t = tg__self();
    pthread_mutex_lock(&gil);
    while (!atomic_load(&loop_stop)) {
        if (!tg__try_turn(t))
            tg__wait_for_turn(t, (PyObject *)(uintptr_t)0x4560);
        pthread_mutex_unlock(&gil); /* the launch lets the GIL go */
        for (volatile int i = 0; i < 2000; i++)
            ;
        pthread_mutex_lock(&gil);
        tg__release_turn(t); /* back to back: the GIL kept */
    }
    pthread_mutex_unlock(&gil);
    return NULL;
}

Test(turn_lost_wake, looping_quiet_holder_keeps_a_waiter_out_about_a_slice)
{
    pthread_t l;
    pthread_create(&l, NULL, looper, NULL);
    usleep(20000);
    uint64_t worst = 0;
    for (int k = 0; k < 20; k++) {
        pthread_mutex_lock(&gil);
        struct tg_thread *t = tg__self();
        uint64_t t0 = tg_mono_ns();
        int got = tg__try_turn(t) ? 1 : tg__wait_for_turn(t, (PyObject *)(uintptr_t)0x1230);
        uint64_t dt = tg_mono_ns() - t0;
        cr_assert(got);
        tg__release_turn(t);
        pthread_mutex_unlock(&gil);
        if (dt > worst)
            worst = dt;
        usleep(3000);
    }
    atomic_store(&loop_stop, 1);
    pthread_join(l, NULL);
    cr_log_info("worst wait %.2f ms", worst / 1e6);
    cr_assert_lt(worst, 2 * TG_TURN_SLICE_NS, "worst wait %.2f ms", worst / 1e6);
}
