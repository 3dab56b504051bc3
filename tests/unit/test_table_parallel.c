/* The tuner table with threads that really run at once, as in a
 * free-threaded build (tg_py.free_threaded set: the entry locks, the table
 * lock and the graph lock are on), without a lock standing in for the GIL:
 * claims of one key from many threads, occupants entering and leaving one
 * tuner, serialize's lock with its FIFO and wake-ups, the hand-off order,
 * and a cycle of waits closed by two threads at once.  Built a second time
 * with -fsanitize=thread (tsan/test_table_parallel, cmake/tsan.cmake).
 *
 * Overlaps are forced by barriers and by observed state (a lock word that
 * says a thread parks, a thread's state in /proc), never by sleeping. */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/park.h"
#include "core/py_api.h"
#include "detectors/tuner_table.h"
#include "core/options.h"

#define NTH 6
#define NOCC_TH 10 /* more than a tuner has slots: two without one */
#define KEY(i) ((uintptr_t)0x7f0000200000ull + (uintptr_t)(i) * 0x40)

static struct tg_thread rec[NOCC_TH + 2];
static pthread_barrier_t bar;

static void setup(void)
{
    tg_py.free_threaded = 1;
    for (int i = 0; i < NOCC_TH + 2; i++)
        rec[i].tid = (pid_t)(5000 + i);
}

TestSuite(table_parallel, .init = setup);

static void start_all(void *(*fn)(void *), pthread_t *th, int n)
{
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, fn, (void *)(intptr_t)i);
}

static void join_all(pthread_t *th, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
}

/* Until cond() or 10 s (a broken build must fail, not hang). */
static int until(int (*cond)(void))
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (cond())
            return 1;
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - t0.tv_sec < 10);
    return 0;
}

/* ---- claims ----------------------------------------------------------------- */

#define NKEYS 512
static struct tg_tuner *claimed[NTH][NKEYS];

static void *claim_keys(void *arg)
{
    const int me = (int)(intptr_t)arg;
    pthread_barrier_wait(&bar);
    for (int j = 0; j < NKEYS; j++) { /* each thread in its own order: claims of different keys meet too */
        const int k = (j + me * (NKEYS / NTH)) % NKEYS;
        claimed[me][k] = tg_tuner_get(KEY(k));
    }
    return NULL;
}

/* Every thread asks for the same 512 keys at once: one entry per key, each
 * with its key. */
Test(table_parallel, one_entry_per_key_whoever_claims_it)
{
    pthread_t th[NTH];
    start_all(claim_keys, th, NTH);
    join_all(th, NTH);
    for (int k = 0; k < NKEYS; k++) {
        cr_assert_not_null(claimed[0][k]);
        cr_assert_eq(claimed[0][k]->key, KEY(k));
        for (int i = 1; i < NTH; i++)
            cr_assert_eq(claimed[i][k], claimed[0][k], "key %d: thread %d got another entry", k, i);
    }
    int n = 0, cursor = 0;
    while (tg_tuner_next(&cursor))
        n++;
    cr_assert_eq(n, NKEYS);
}

/* ---- occupants ---------------------------------------------------------------- */

#define OCC_ROUNDS 3000
static struct tg_tuner *occ_u;
static int occ_bad; /* an invariant seen broken under the entry lock */

/* Under u's entry lock: every slot in use is one thread's, once; nocc counts
 * the slots and those without one. */
static void check_occupants(struct tg_tuner *u)
{
    tg_tuner_entry_lock(u);
    int used = 0;
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        if ((u->occ_tid[i] != 0) != (u->occ[i].thread != NULL))
            occ_bad = 1;
        if (!u->occ_tid[i])
            continue;
        used++;
        if (u->occ[i].tid != u->occ_tid[i] || u->occ[i].depth < 1)
            occ_bad = 1;
        for (int j = 0; j < i; j++)
            if (u->occ_tid[j] == u->occ_tid[i])
                occ_bad = 1;
    }
    if (u->nocc < used || u->nocc > NOCC_TH)
        occ_bad = 1;
    tg_tuner_entry_unlock(u);
}

static void *enter_leave(void *arg)
{
    struct tg_thread *t = &rec[(int)(intptr_t)arg];
    pthread_barrier_wait(&bar);
    for (int r = 0; r < OCC_ROUNDS; r++) {
        (void)tg_tuner_decide(occ_u, t, TG_MODE_DETECT);
        struct tg_occupant *o = tg_tuner_enter(occ_u, t, NULL, NULL, (uint64_t)r, 0);
        t->held[0] = occ_u;
        t->held_slot[0] = o ? (uint8_t)(o - occ_u->occ) : 0xff;
        t->nheld = 1;
        if (r % 3 == 0) { /* a nested level, as run calling warmup */
            tg_tuner_enter(occ_u, t, NULL, NULL, 0, 1);
            tg_tuner_leave(occ_u, t);
        }
        if (r % 16 == 0)
            check_occupants(occ_u);
        t->nheld = 0;
        cr_assert_eq(tg_tuner_leave_at(occ_u, t, o), 1);
    }
    return NULL;
}

/* Ten threads enter and leave one tuner at once (eight slots: some go in
 * without one): each counted once while inside, none left counted after. */
Test(table_parallel, each_occupant_counted_once)
{
    occ_u = tg_tuner_get(KEY(100));
    pthread_t th[NOCC_TH];
    start_all(enter_leave, th, NOCC_TH);
    join_all(th, NOCC_TH);
    cr_assert_eq(occ_bad, 0, "an occupant counted twice, or a slot half filled");
    cr_assert_eq(occ_u->nocc, 0);
    cr_assert_eq(tg_tuner_overflow(occ_u), 0);
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        cr_assert_eq(occ_u->occ_tid[i], 0, "slot %d still taken", i);
}

/* ---- serialize's lock: no lost wake ------------------------------------------ */

#define LOCK_ROUNDS 2000
static struct tg_tuner *lk_u;
static int lk_inside, lk_max_inside, lk_timeouts;
static uint64_t lk_calls;

/* A serialized call as guard/serialize_wait.c makes one: try the lock; else
 * queue, and park on the thread's own word, taking the lock where it wakes;
 * then enter, call, leave, unlock and wake the FIFO's head. */
static void serialized_call(struct tg_thread *t)
{
    const uint32_t tid = (uint32_t)t->tid;
    if (tg_tuner_decide(lk_u, t, TG_MODE_SERIALIZE) == TG_WAIT) {
        tg_tuner_wait_push(lk_u, t);
        for (;;) {
            uint32_t seen = __atomic_load_n(&t->park, __ATOMIC_ACQUIRE);
            if (tg_tuner_try_lock(lk_u, tid))
                break;
            if (tg_park_wait(&t->park, seen, 5000000000ull) == ETIMEDOUT)
                __atomic_fetch_add(&lk_timeouts, 1, __ATOMIC_RELAXED); /* nobody woke it: lost */
        }
        tg_tuner_served(lk_u, 0);
        tg_tuner_wait_remove(lk_u, t);
    }
    struct tg_occupant *o = tg_tuner_enter(lk_u, t, NULL, NULL, 0, 0);
    const int in = __atomic_add_fetch(&lk_inside, 1, __ATOMIC_RELAXED);
    if (in > __atomic_load_n(&lk_max_inside, __ATOMIC_RELAXED))
        __atomic_store_n(&lk_max_inside, in, __ATOMIC_RELAXED);
    lk_calls++; /* plain: the lock orders it */
    __atomic_sub_fetch(&lk_inside, 1, __ATOMIC_RELAXED);
    tg_tuner_leave_at(lk_u, t, o);
    struct tg_thread *w = tg_tuner_unlock(lk_u, t);
    if (w)
        tg_park_wake(&w->park);
}

static void *lock_loop(void *arg)
{
    struct tg_thread *t = &rec[(int)(intptr_t)arg];
    pthread_barrier_wait(&bar);
    for (int r = 0; r < LOCK_ROUNDS; r++)
        serialized_call(t);
    return NULL;
}

Test(table_parallel, serialize_one_inside_and_no_lost_wake)
{
    lk_u = tg_tuner_get(KEY(200));
    pthread_t th[NTH];
    start_all(lock_loop, th, NTH);
    join_all(th, NTH);
    cr_assert_eq(lk_timeouts, 0, "a waiter was never woken (a lost wake)");
    cr_assert_eq(lk_max_inside, 1, "two threads held the lock at once");
    cr_assert_eq(lk_calls, (uint64_t)NTH * LOCK_ROUNDS);
    cr_assert_eq(lk_u->waiters, 0);
    cr_assert_null(lk_u->wq_head);
    cr_assert_null(lk_u->wq_tail);
    cr_assert_eq(lk_u->owner, 0);
}

/* ---- the FIFO's order ---------------------------------------------------------- */

static struct tg_tuner *fifo_u;
static int fifo_served[NTH], fifo_nserved;
static struct tg_thread *fifo_holder;

static void *queue_and_wait(void *arg)
{
    const int me = (int)(intptr_t)arg;
    struct tg_thread *t = &rec[me];
    pthread_barrier_wait(&bar); /* all push at once */
    tg_tuner_wait_push(fifo_u, t);
    for (;;) {
        uint32_t seen = __atomic_load_n(&t->park, __ATOMIC_ACQUIRE);
        if (tg_tuner_try_lock(fifo_u, (uint32_t)t->tid))
            break;
        tg_park_wait(&t->park, seen, 5000000000ull);
    }
    tg_tuner_wait_remove(fifo_u, t);
    fifo_served[fifo_nserved++] = me; /* plain: it holds the lock */
    __atomic_store_n(&fifo_u->starving, 1, __ATOMIC_RELAXED); /* every unlock hands over */
    struct tg_thread *w = tg_tuner_unlock(fifo_u, t);
    if (w)
        tg_park_wake(&w->park);
    return NULL;
}

static int all_queued(void)
{
    return __atomic_load_n(&fifo_u->waiters, __ATOMIC_RELAXED) == NTH;
}

/* Six threads queue at once behind a holder; with every unlock a hand-off
 * (starving), they get the lock in the FIFO's order, each once. */
Test(table_parallel, hand_offs_follow_the_fifo)
{
    fifo_u = tg_tuner_get(KEY(300));
    fifo_holder = &rec[NTH];
    cr_assert(tg_tuner_try_lock(fifo_u, (uint32_t)fifo_holder->tid));
    pthread_t th[NTH];
    start_all(queue_and_wait, th, NTH);
    cr_assert(until(all_queued), "the threads did not all queue");
    int order[NTH], n = 0;
    tg_tuner_entry_lock(fifo_u);
    for (struct tg_thread *w = fifo_u->wq_head; w && n < NTH; w = w->wait_next)
        order[n++] = (int)(w - rec);
    tg_tuner_entry_unlock(fifo_u);
    cr_assert_eq(n, NTH, "the FIFO lost a waiter");
    __atomic_store_n(&fifo_u->starving, 1, __ATOMIC_RELAXED);
    struct tg_thread *w = tg_tuner_unlock(fifo_u, fifo_holder);
    cr_assert_not_null(w);
    tg_park_wake(&w->park);
    join_all(th, NTH);
    cr_assert_eq(fifo_nserved, NTH);
    for (int i = 0; i < NTH; i++)
        cr_assert_eq(fifo_served[i], order[i], "served %d-th: thread %d, queued %d-th: %d", i, fifo_served[i], i,
                     order[i]);
    cr_assert_eq(fifo_u->waiters, 0);
    cr_assert_null(fifo_u->wq_tail);
}

/* ---- a cycle of waits closed by two threads at once ------------------------------ */

static struct tg_tuner *cy_u1, *cy_u2;
static int cy_found[2];
static pid_t cy_tid[2];

/* Thread 0 holds u1 and waits for u2; thread 1 holds u2 and waits for u1. */
static void *close_cycle(void *arg)
{
    const int me = (int)(intptr_t)arg;
    __atomic_store_n(&cy_tid[me], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    struct tg_tuner *path[16];
    cy_found[me] = tg_tuner_wait_cycle(me == 0 ? cy_u2 : cy_u1, &rec[me], path, 16);
    return NULL;
}

static int first_searching(void)
{
    /* it recorded its wait and parks on u2's entry lock, in its search */
    return __atomic_load_n((void **)&rec[0].waiting_for, __ATOMIC_ACQUIRE) == cy_u2 &&
           __atomic_load_n(&cy_u2->lock, __ATOMIC_ACQUIRE) == 2;
}

/* Thread 1 is asleep (on the graph lock; or, with no graph lock, on u2's
 * entry lock in its own search). */
static int second_asleep(void)
{
    pid_t tid = __atomic_load_n(&cy_tid[1], __ATOMIC_ACQUIRE);
    if (!tid)
        return 0;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

/* The first thread searches (held up inside its search: the test holds u2's
 * entry lock) while the second adds the edge that closes the cycle.  The
 * second's search waits for the first's: the first finds no cycle, the
 * second finds it, once. */
Test(table_parallel, a_cycle_closed_at_once_is_found_once)
{
    cy_u1 = tg_tuner_get(KEY(400));
    cy_u2 = tg_tuner_get(KEY(401));
    tg_tuner_enter(cy_u1, &rec[0], NULL, NULL, 0, 0);
    tg_tuner_enter(cy_u2, &rec[1], NULL, NULL, 0, 0);
    tg_tuner_entry_lock(cy_u2); /* the first search stops at u2 */
    pthread_t th[2];
    pthread_create(&th[0], NULL, close_cycle, (void *)(intptr_t)0);
    cr_assert(until(first_searching), "the first thread did not reach u2 in its search");
    pthread_create(&th[1], NULL, close_cycle, (void *)(intptr_t)1);
    cr_assert(until(second_asleep), "the second thread did not block");
    tg_tuner_entry_unlock(cy_u2);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    cr_assert_eq(cy_found[0], 0, "the first search saw an edge added after it began");
    cr_assert_eq(cy_found[1], 2, "the second thread closed the cycle and must find it");
}
