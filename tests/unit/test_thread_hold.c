/* Holding another thread where it is (core/thread_hold.h): a reader and an
 * owner thread whose CUDA call (the hooks' own leave, cuda/cuda_record.h)
 * or tunerguard wait it is inside.  The owner's thread state is a fake one:
 * only its `state` is read (3.13t's layout), and PyGILState_Check is not
 * resolved, so the owner counts as detached unless the fake says attached.
 * Every wait is bounded. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#include "core/clock.h"
#include "core/options.h"
#include "core/py_api.h"
#include "core/thread_hold.h"
#include "cuda/cuda_record.h"

#define STATE_AT 40 /* PyThreadState.state, 3.13 */

static int64_t fake_tstate[32];
static struct tg_thread *_Atomic owner;
static _Atomic int go, left;

static void set_state(int s)
{
    __atomic_store_n((int *)(void *)((char *)fake_tstate + STATE_AT), s, __ATOMIC_SEQ_CST);
}

static void free_threaded(void)
{
    tg_py.free_threaded = 1;
    tg_py.minor = 13;
    tg_py.PyGILState_Check = NULL;
    tg_opts.mode = TG_MODE_DETECT;
    owner = NULL;
    go = left = 0;
}

/* Wait (bounded) until *flag is set. */
static int until(_Atomic int *flag)
{
    for (int i = 0; i < 20000 && !*flag; i++) {
        struct timespec ts = {0, 250000};
        nanosleep(&ts, NULL);
    }
    return *flag;
}

/* The owner inside a CUDA call as the hooks record it; on `go` the call
 * returns and the hooks' leave runs. */
static void *in_call(void *arg)
{
    (void)arg;
    struct tg_thread *t = tg__self();
    __atomic_store_n(&t->nheld, 1, __ATOMIC_RELAXED); /* inside a tuner session */
    tg__cuda_seq_begin(&t->last);
    t->last.kind = TG_CUDA_SYNC;
    t->last.inside = 1;
    tg__cuda_seq_end(&t->last);
    owner = t;
    until(&go);
    tg__cuda_leave(t, TG_CUDA_SYNC);
    left = 1;
    return NULL;
}

/* The owner in one of tunerguard's waits (detached), leaving it on `go`. */
static void *in_tg_wait(void *arg)
{
    (void)arg;
    struct tg_thread *t = tg__self();
    __atomic_store_n(&t->nheld, 1, __ATOMIC_RELAXED);
    tg_hold_wait_begin(t);
    owner = t;
    until(&go);
    tg_hold_wait_end(t);
    left = 1;
    return NULL;
}

static struct tg_thread *start(pthread_t *th, void *(*fn)(void *))
{
    cr_assert(pthread_create(th, NULL, fn, NULL) == 0);
    for (int i = 0; i < 20000 && !owner; i++) {
        struct timespec ts = {0, 250000};
        nanosleep(&ts, NULL);
    }
    cr_assert(owner);
    return owner;
}

/* Held while the owner is inside its call, detached: the call returns
 * meanwhile, and the owner parks in the hooks' leave until released. */
Test(thread_hold, parks_at_the_call_return, .init = free_threaded, .timeout = 30)
{
    pthread_t th;
    set_state(0);
    struct tg_thread *t = start(&th, in_call);
    cr_assert_eq(tg_hold_other(t, fake_tstate), 1, "inside a detached call: held at once");
    go = 1;
    for (int i = 0; i < 20000 && __atomic_load_n(&t->last.hold, __ATOMIC_ACQUIRE) != TG_HOLD_PARKED; i++) {
        struct timespec ts = {0, 250000};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(__atomic_load_n(&t->last.hold, __ATOMIC_ACQUIRE), TG_HOLD_PARKED, "parked at the return");
    cr_assert_eq(left, 0, "parked: its call has not returned");
    tg_hold_release(t);
    cr_assert(until(&left), "released: the call returns");
    pthread_join(th, NULL);
    cr_assert_eq(t->last.hold, TG_HOLD_NONE);
}

/* A call made attached is no parking point: not held, the bound kept, the
 * request withdrawn. */
Test(thread_hold, attached_call_not_held, .init = free_threaded, .timeout = 30)
{
    pthread_t th;
    set_state(1);
    struct tg_thread *t = start(&th, in_call);
    const uint64_t t0 = tg_mono_ns();
    cr_assert_eq(tg_hold_other(t, fake_tstate), 0);
    const uint64_t waited = tg_mono_ns() - t0;
    cr_assert(waited >= (uint64_t)TG_HOLD_BOUND_MS * 1000000ull && waited < 2000000000ull,
              "waited %llu ns", (unsigned long long)waited);
    cr_assert_eq(t->last.hold, TG_HOLD_NONE);
    go = 1;
    cr_assert(until(&left));
    pthread_join(th, NULL);
}

/* A thread in no call and no wait (running Python code): not held. */
Test(thread_hold, running_thread_not_held, .init = free_threaded, .timeout = 30)
{
    pthread_t th;
    set_state(0);
    struct tg_thread *t = start(&th, in_call);
    go = 1;
    cr_assert(until(&left), "the call returned, nobody asked");
    set_state(1);
    cr_assert_eq(tg_hold_other(t, fake_tstate), 0);
    cr_assert_eq(t->last.hold, TG_HOLD_NONE);
    pthread_join(th, NULL);
}

/* tunerguard's own wait is a parking point: held, and the end of the wait
 * parks until released. */
Test(thread_hold, parks_at_the_end_of_a_wait, .init = free_threaded, .timeout = 30)
{
    pthread_t th;
    set_state(0);
    struct tg_thread *t = start(&th, in_tg_wait);
    cr_assert_eq(tg_hold_other(t, fake_tstate), 1, "in a wait: held at once");
    go = 1;
    for (int i = 0; i < 20000 && __atomic_load_n(&t->last.hold, __ATOMIC_ACQUIRE) != TG_HOLD_PARKED; i++) {
        struct timespec ts = {0, 250000};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(__atomic_load_n(&t->last.hold, __ATOMIC_ACQUIRE), TG_HOLD_PARKED, "parked at the wait's end");
    cr_assert_eq(left, 0, "the wait's end parks");
    tg_hold_release(t);
    cr_assert(until(&left));
    pthread_join(th, NULL);
}

/* The owner inside a tuner session, running (no call, no wait), then ending
 * its session (its thread could end next, its thread state freed). */
static void *in_session(void *arg)
{
    (void)arg;
    struct tg_thread *t = tg__self();
    __atomic_store_n(&t->nheld, 1, __ATOMIC_RELAXED);
    owner = t;
    until(&go);
    __atomic_store_n(&t->nheld, 0, __ATOMIC_RELAXED);
    tg_hold_session_end(t);
    left = 1;
    return NULL;
}

static char *watched_page;
static void *read_watched(void *arg)
{
    return (void *)(intptr_t)tg_hold_other((struct tg_thread *)arg, watched_page);
}

/* The reader's first look at the owner's thread state, seen: the state
 * lives on a page that faults when read; the fault opens the page (the
 * state says attached: the reader keeps looking) and says so.  The reader
 * reads the state only once it has found the owner inside a session after
 * its barrier, the point past which a session's end must park. */
static _Atomic int looked;

static void on_first_look(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    char *a = (char *)si->si_addr;
    if (watched_page && a >= watched_page && a < watched_page + 4096) {
        mprotect(watched_page, 4096, PROT_READ | PROT_WRITE);
        looked = 1;
        return;
    }
    signal(SIGSEGV, SIG_DFL); /* any other fault: the test dies of it */
}

/* A reader looking at a thread inside its session: the session's end waits
 * for the reader (parked, detached) before the thread can go on and end. */
Test(thread_hold, session_end_waits_for_the_reader, .init = free_threaded, .timeout = 30)
{
    pthread_t th, rd;
    tg_hold_other(tg__self(), fake_tstate); /* the barrier registered (slow, once): not held, out of a session */
    watched_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(watched_page != MAP_FAILED);
    __atomic_store_n((int *)(void *)(watched_page + STATE_AT), 1, __ATOMIC_SEQ_CST); /* attached */
    cr_assert(mprotect(watched_page, 4096, PROT_NONE) == 0);
    struct sigaction sa = {0}, old;
    sa.sa_sigaction = on_first_look;
    sa.sa_flags = SA_SIGINFO;
    cr_assert(sigaction(SIGSEGV, &sa, &old) == 0);
    looked = 0;
    struct tg_thread *t = start(&th, in_session);
    cr_assert(pthread_create(&rd, NULL, read_watched, t) == 0);
    cr_assert(until(&looked), "the reader looked at the owner's state");
    go = 1; /* the session ends after the reader's look: it must park */
    void *held;
    pthread_join(rd, &held);
    cr_assert_eq((intptr_t)held, 1, "parked at its session's end: held");
    cr_assert_eq(__atomic_load_n(&t->last.hold, __ATOMIC_ACQUIRE), TG_HOLD_PARKED, "parked on the word");
    cr_assert_eq(left, 0, "still in its session's end while held");
    tg_hold_release(t);
    cr_assert(until(&left));
    pthread_join(th, NULL);
    sigaction(SIGSEGV, &old, NULL);
    munmap(watched_page, 4096);
    watched_page = NULL;
}

/* A thread out of its tuner sessions may end meanwhile and its thread
 * state be freed: not held, and its thread state never read (here a page
 * that faults when read). */
Test(thread_hold, out_of_session_state_not_read, .init = free_threaded, .timeout = 30)
{
    pthread_t th;
    set_state(0);
    struct tg_thread *t = start(&th, in_call);
    __atomic_store_n(&t->nheld, 0, __ATOMIC_RELAXED); /* its session over, still in the call */
    void *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(gone != MAP_FAILED);
    cr_assert_eq(tg_hold_other(t, gone), 0);
    cr_assert_eq(t->last.hold, TG_HOLD_NONE);
    go = 1;
    cr_assert(until(&left));
    pthread_join(th, NULL);
    munmap(gone, 4096);
}

/* With a GIL build nothing is held: the reader reads as before. */
Test(thread_hold, gil_build_never_holds, .init = free_threaded, .timeout = 30)
{
    pthread_t th;
    tg_py.free_threaded = 0;
    set_state(0);
    struct tg_thread *t = start(&th, in_call);
    cr_assert_eq(tg_hold_other(t, fake_tstate), 0);
    go = 1;
    cr_assert(until(&left));
    pthread_join(th, NULL);
}

/* A request a reader in the parent left on the forking thread's record is
 * gone in the child: nobody there would clear it. */
Test(thread_hold, fork_child_forgets_requests, .init = free_threaded, .timeout = 30)
{
    struct tg_thread *t = tg__self();
    __atomic_store_n(&t->last.hold, TG_HOLD_ASKED, __ATOMIC_SEQ_CST);
    tg__thread_atfork_child();
    cr_assert_eq(t->last.hold, TG_HOLD_NONE);
    tg__cuda_leave(t, TG_CUDA_SYNC); /* returns: nothing asked */
}
