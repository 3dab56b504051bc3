/* The guard's shared state with threads that really run at once, as in a
 * free-threaded build (tg_py.free_threaded set: the tuners' entry locks are
 * on), with no lock standing in for the GIL: the lock that arming and guard
 * installs take (core/py_lock.h), the exit line's counts, the tid-alive
 * cache, the sessions without a slot, the lazy sessions' registry and the
 * exception links.  Every thread starts its part at one barrier.  Built a
 * second time with -fsanitize=thread (tsan/test_guard_parallel,
 * cmake/tsan.cmake), where a plain access left among them is a report. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/py_api.h"
#include "core/py_lock.h"
#include "core/thread_state.h"
#include "detectors/tuner_table.h"
#include "guard/guard_internal.h"
#include "guard/serialize_wait_internal.h"

#define NTH 6
#define ROUNDS 2000

static pthread_barrier_t bar;

static void setup(void)
{
    tg_py.free_threaded = 1;
    pthread_barrier_init(&bar, NULL, NTH);
}

static void teardown(void)
{
    pthread_barrier_destroy(&bar);
}

TestSuite(guard_parallel, .init = setup, .fini = teardown);

static void run_all(void *(*fn)(void *))
{
    pthread_t th[NTH];
    for (long i = 0; i < NTH; i++)
        pthread_create(&th[i], NULL, fn, (void *)i);
    for (int i = 0; i < NTH; i++)
        pthread_join(th[i], NULL);
}

/* ---- the install lock: one holder at a time, re-entered by its holder ---- */

static struct tg_py_lock lk = TG_PY_LOCK_INIT;
static long inside, most, total;

static void *lock_worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&bar);
    for (int r = 0; r < ROUNDS; r++) {
        if (r % 3 == 0) {
            if (!tg_py_trylock(&lk))
                continue;
        } else {
            tg_py_lock(&lk);
        }
        tg_py_lock(&lk); /* re-entered: an install from a class made inside an install */
        long now = ++inside;
        if (now > most)
            most = now;
        total++;
        inside--;
        tg_py_unlock(&lk);
        tg_py_unlock(&lk);
    }
    return NULL;
}

Test(guard_parallel, install_lock_one_holder)
{
    run_all(lock_worker);
    cr_assert_eq(most, 1, "%ld threads held the lock at once", most);
    cr_assert(total > 0 && total <= (long)NTH * ROUNDS);
    cr_assert_eq(lk.owner, 0ul);
}

/* ---- the exit line's counts: every wait counted ---------------------------- */

static void *wait_worker(void *arg)
{
    (void)arg;
    struct tg_thread *t = tg__self();
    pthread_barrier_wait(&bar);
    for (int r = 0; r < ROUNDS; r++) {
        tg__wait_begin(t, 1000);
        tg__wait_done(NULL, t, 1000);
    }
    return NULL;
}

Test(guard_parallel, exit_counts_whole)
{
    struct tg_guard_stats s;
    tg_guard_stats(&s);
    const uint64_t before = s.waits;
    run_all(wait_worker);
    tg_guard_stats(&s);
    cr_assert_eq(s.waits - before, (uint64_t)NTH * ROUNDS, "%llu waits counted, %d made",
                 (unsigned long long)(s.waits - before), NTH * ROUNDS);
    cr_assert_eq(s.still_waiting, 0u, "%llu still waiting", (unsigned long long)s.still_waiting);
}

/* ---- the tid-alive cache: each slot one word -------------------------------- */

static pid_t tids[NTH];

static void *alive_worker(void *arg)
{
    long i = (long)arg;
    tids[i] = (pid_t)syscall(SYS_gettid);
    pthread_barrier_wait(&bar);
    int ok = 1;
    for (int r = 0; r < ROUNDS; r++)
        ok &= tg__tid_alive_cached(tids[(i + r) % NTH]) == 1; /* every one is alive until the last barrier */
    pthread_barrier_wait(&bar);
    return (void *)(long)ok;
}

Test(guard_parallel, alive_cache)
{
    pthread_t th[NTH];
    for (long i = 0; i < NTH; i++)
        pthread_create(&th[i], NULL, alive_worker, (void *)i);
    for (int i = 0; i < NTH; i++) {
        void *ok;
        pthread_join(th[i], &ok);
        cr_assert(ok != NULL, "a live thread was said dead");
    }
}

/* ---- sessions without a slot: entered, left and scanned at once ----------- */

static void *slotless_worker(void *arg)
{
    long i = (long)arg;
    struct tg_thread *t = tg__self();
    const uintptr_t inst = 0x7f0000300000ull + (uintptr_t)(i % 2) * 0x40;
    pthread_barrier_wait(&bar);
    int ok = 1;
    for (int r = 0; r < ROUNDS; r++) {
        tg__slotless_enter(t, inst, NULL, (uint64_t)r + 1);
        struct tg_slotless all[TG_SLOTLESS_MAX], s;
        int n = tg__slotless_all(inst, all, TG_SLOTLESS_MAX), mine = 0;
        for (int k = 0; k < n; k++) {
            ok &= all[k].inst == inst;
            mine |= all[k].t == t && all[k].entered == (uint64_t)r + 1;
        }
        ok &= mine && tg__slotless_find(inst, t->tid, (uint64_t)r + 1, &s) && s.t == t;
        tg__slotless_leave(t);
    }
    return (void *)(long)ok;
}

Test(guard_parallel, slotless_list)
{
    pthread_t th[NTH];
    for (long i = 0; i < NTH; i++)
        pthread_create(&th[i], NULL, slotless_worker, (void *)i);
    for (int i = 0; i < NTH; i++) {
        void *ok;
        pthread_join(th[i], &ok);
        cr_assert(ok != NULL, "a scan saw another instance's session, or missed its own");
    }
}

/* ---- the lazy sessions' registry: one slot per thread ---------------------- */

static int slot_of[NTH];

static void *lazy_worker(void *arg)
{
    long i = (long)arg;
    struct tg_thread *t = tg__self();
    pthread_barrier_wait(&bar);
    slot_of[i] = tg__lazy_slot(t) ? tg__gthread(t)->lazy_slot : -1;
    return NULL;
}

Test(guard_parallel, lazy_registry_claims)
{
    run_all(lazy_worker);
    for (int i = 0; i < NTH; i++) {
        cr_assert(slot_of[i] > 0, "thread %d got no slot", i);
        for (int j = 0; j < i; j++)
            cr_assert_neq(slot_of[i], slot_of[j], "threads %d and %d claimed one slot", i, j);
    }
}

/* ---- the exception link: one race links a session ------------------------ */

static struct tg_tuner tuner;
static int linked_by[NTH];

static void *link_worker(void *arg)
{
    long i = (long)arg;
    struct tg_occupant *o = &tuner.occ[0];
    pthread_barrier_wait(&bar);
    linked_by[i] = tg__link_set(&tuner, o, (pid_t)(7000 + i), "Thread-x", (uint64_t)i + 1, 0);
    char name[48];
    uint64_t seq;
    pid_t tid = tg__link_read(&tuner, o, name, sizeof name, &seq);
    /* whole: the tid, the name and the seq of one race */
    return (void *)(long)(tid >= 7000 && tid < 7000 + NTH && seq == (uint64_t)(tid - 7000) + 1 &&
                          strcmp(name, "Thread-x") == 0);
}

Test(guard_parallel, exception_link_once)
{
    memset(&tuner, 0, sizeof tuner);
    pthread_t th[NTH];
    for (long i = 0; i < NTH; i++)
        pthread_create(&th[i], NULL, link_worker, (void *)i);
    int winners = 0;
    for (int i = 0; i < NTH; i++) {
        void *ok;
        pthread_join(th[i], &ok);
        cr_assert(ok != NULL, "a link read torn");
        winners += linked_by[i];
    }
    cr_assert_eq(winners, 1, "%d races linked one session", winners);
}
