/* See thread_hold.h. */
#include "core/thread_hold.h"
#include "core/clock.h"
#include "core/park.h"
#include "core/py_api.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* PyThreadState's `state` (3.13's cpython/pystate.h: after prev, next,
 * interp, eval_breaker, _status and _whence; 3.14 taken as the same), whose values are
 * pycore_pystate.h's _Py_THREAD_DETACHED 0, _ATTACHED 1, _SUSPENDED 2.
 * Written by CPython with atomic stores and exchanges. */
#define TG_TSTATE_STATE_AT 40
#define TG_THREAD_ATTACHED 1

static int state_known(void)
{
    return tg_py.free_threaded && (tg_py.minor == 13 || tg_py.minor == 14);
}

/* The process's threads can be made to pass a barrier: registered once
 * (idempotent; a fork child registers again, as its first use fails). */
static int barrier(void)
{
    int saved = errno;
    long rc = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    if (rc != 0 && errno == EPERM &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
        rc = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    errno = saved;
    return rc == 0;
}

void tg_hold_park(struct tg_thread *t)
{
    if (tg_py_gil_held())
        return; /* attached: no parking point; the reader waits for another, or its bound */
    uint32_t want = TG_HOLD_ASKED;
    if (!__atomic_compare_exchange_n(&t->last.hold, &want, TG_HOLD_PARKED, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return; /* cleared meanwhile: the reader gave up */
    while (__atomic_load_n(&t->last.hold, __ATOMIC_ACQUIRE) == TG_HOLD_PARKED)
        tg_park_wait(&t->last.hold, TG_HOLD_PARKED, 1000000000ull);
}

/* Is ot inside a CUDA call or one of tunerguard's waits, detached, the same
 * one from the first look to the last?  The seqlock's counter and the
 * wait's tell one call or wait from the next.  tstate is alive: ot was in a
 * session after the reader's barrier, so it parks at its session's end
 * (tg_hold_session_end) before it can return and end its thread. */
static int detached_inside(const struct tg_thread *ot, const void *tstate)
{
    const uint32_t s1 = __atomic_load_n(&ot->last.seq, __ATOMIC_ACQUIRE);
    const uint8_t in = __atomic_load_n(&ot->last.inside, __ATOMIC_RELAXED);
    const uint32_t w1 = __atomic_load_n(&ot->wait_seq, __ATOMIC_ACQUIRE);
    const int state = __atomic_load_n((const int *)(const void *)((const char *)tstate + TG_TSTATE_STATE_AT),
                                      __ATOMIC_ACQUIRE);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    const uint32_t s2 = __atomic_load_n(&ot->last.seq, __ATOMIC_RELAXED);
    const uint32_t w2 = __atomic_load_n(&ot->wait_seq, __ATOMIC_RELAXED);
    if (state == TG_THREAD_ATTACHED)
        return 0;
    return ((w1 & 1) && w1 == w2) || (!(s1 & 1) && s1 == s2 && in);
}

int tg_hold_other(struct tg_thread *ot, const void *tstate)
{
    if (!ot || !tstate || !state_known())
        return 0;
    uint32_t want = TG_HOLD_NONE;
    if (!__atomic_compare_exchange_n(&ot->last.hold, &want, TG_HOLD_ASKED, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_RELAXED))
        return 0; /* another reader holds it */
    if (!barrier()) {
        tg_hold_release(ot);
        return 0;
    }
    /* Its thread state is read below (its `state`): only while it is known
     * to live.  A thread inside a tuner session (nheld > 0) after the
     * barrier stores nheld 0 later, and so loads the request after it and
     * waits at its session's end until it is released; one seen out of its
     * sessions may have ended its thread and freed its state meanwhile. */
    if (__atomic_load_n(&ot->nheld, __ATOMIC_ACQUIRE) <= 0) {
        tg_hold_release(ot);
        return 0;
    }
    const uint64_t deadline = tg_mono_ns() + (uint64_t)TG_HOLD_BOUND_MS * 1000000ull;
    for (;;) {
        if (__atomic_load_n(&ot->last.hold, __ATOMIC_ACQUIRE) == TG_HOLD_PARKED || detached_inside(ot, tstate))
            return 1;
        if (tg_mono_ns() >= deadline)
            break;
        struct timespec ts = {0, 50000}; /* 50 µs between looks */
        nanosleep(&ts, NULL);
    }
    tg_hold_release(ot);
    return 0;
}

void tg_hold_release(struct tg_thread *ot)
{
    if (__atomic_exchange_n(&ot->last.hold, TG_HOLD_NONE, __ATOMIC_SEQ_CST) == TG_HOLD_PARKED) {
        int saved = errno;
        syscall(SYS_futex, &ot->last.hold, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        errno = saved;
    }
}

void tg_hold_session_park(struct tg_thread *t)
{
    if (!tg_py_gil_held()) {
        tg_hold_park(t);
        return;
    }
    PyThreadState *self = tg_py.PyEval_SaveThread(); /* parked detached: a stop-the-world does not wait */
    tg_hold_park(t);
    tg_py.PyEval_RestoreThread(self);
}
