/* The tuner table (detectors/tuner_table.c): nesting is depth, a second
 * thread is a race (detect) or a wait (serialize), leave ends a session only
 * at its last level, occupant overflow, the key -> entry map, fork reset, and
 * a real two-thread wake-up through tg_tuner_wait_mu and the entry's cond, as
 * shim/py_guard.c waits.
 *
 * Criterion runs each test in its own process, so the static table starts
 * empty in every test. */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "detectors/tuner_table.h"
#include "core/options.h"

static struct tg_thread threads[TG_TUNER_MAX_OCC + 4];
static int dummy_method;

#define KEY(i) ((uintptr_t)0x7f0000001000ull + (uintptr_t)(i) * 0x40)

/* What py_guard.c does on an outermost entry after `verdict`: enter, and
 * push the tuner on the thread's own list of held tuners. */
static struct tg_occupant *enter_outer(struct tg_tuner *u, struct tg_thread *t, uint64_t now)
{
    struct tg_occupant *o = tg_tuner_enter(u, t, (void *)t, &dummy_method, now, 0);
    if (t->nheld < TG_MAX_HELD)
        t->held[t->nheld] = u;
    t->nheld++;
    return o;
}

Test(tuner_table, get_same_key_same_entry)
{
    struct tg_tuner *a = tg_tuner_get(KEY(1));
    cr_assert_not_null(a);
    cr_assert_eq(a->key, KEY(1));
    cr_assert_eq(tg_tuner_get(KEY(1)), a);
    struct tg_tuner *b = tg_tuner_get(KEY(2));
    cr_assert_not_null(b);
    cr_assert_neq(a, b);
    cr_assert_eq(tg_tuner_get(KEY(1)), a);
    cr_assert_eq(tg_tuner_get(KEY(2)), b);
}

/* Fill every slot: all distinct, stable, then the table is full (NULL). */
Test(tuner_table, many_keys_distinct_entries_until_full)
{
    static struct tg_tuner *seen[TG_TUNER_SLOTS];
    for (int i = 0; i < TG_TUNER_SLOTS; i++) {
        seen[i] = tg_tuner_get(KEY(i + 1));
        cr_assert_not_null(seen[i], "key %d", i);
        cr_assert_eq(seen[i]->key, KEY(i + 1));
    }
    for (int i = 0; i < TG_TUNER_SLOTS; i++)
        cr_assert_eq(tg_tuner_get(KEY(i + 1)), seen[i], "key %d moved", i);
    /* Distinct: every entry appears exactly once in the iteration. */
    int cursor = 0, n = 0;
    struct tg_tuner *u;
    while ((u = tg_tuner_next(&cursor))) {
        cr_assert(u->key >= KEY(1) && u->key <= KEY(TG_TUNER_SLOTS));
        n++;
    }
    cr_assert_eq(n, TG_TUNER_SLOTS);
    for (int i = 1; i < TG_TUNER_SLOTS; i++)
        cr_assert_neq(seen[i], seen[i - 1]);
    cr_assert_null(tg_tuner_get(KEY(TG_TUNER_SLOTS + 1)), "full table: the caller passes through");
    cr_assert_eq(tg_tuner_get(KEY(7)), seen[6], "existing keys still found when full");
}

/* Keys that collide in the hash (same bits above bit 4 after mixing are
 * unlikely, but adjacent keys are probed linearly): sequential and strided
 * keys all get their own entries. */
Test(tuner_table, strided_keys)
{
    struct tg_tuner *e[64];
    for (int i = 0; i < 64; i++)
        e[i] = tg_tuner_get((uintptr_t)0x10000 + (uintptr_t)i * 16 * TG_TUNER_SLOTS);
    for (int i = 0; i < 64; i++)
        for (int j = i + 1; j < 64; j++)
            cr_assert_neq(e[i], e[j]);
}

Test(tuner_table, nested_on_one_thread_is_depth_not_race)
{
    struct tg_thread *a = &threads[0];
    for (int mode = TG_MODE_DETECT; mode <= TG_MODE_SERIALIZE; mode++) {
        struct tg_tuner *u = tg_tuner_get(KEY(10 + mode));
        cr_assert_eq(tg_tuner_decide(u, a, mode), TG_FIRST);
        cr_assert_not_null(enter_outer(u, a, 100));
        for (int d = 2; d <= 5; d++) {
            cr_assert_eq(tg_tuner_decide(u, a, mode), TG_NESTED, "depth %d, mode %d", d, mode);
            struct tg_occupant *o = tg_tuner_enter(u, a, NULL, NULL, 0, 1);
            cr_assert_not_null(o);
            cr_assert_eq(o->depth, d);
            cr_assert_eq(u->nocc, 1, "nesting does not add occupants");
        }
        cr_assert_eq(u->sessions, 1);
        /* leave returns 1 only when the last level ends */
        for (int d = 5; d >= 2; d--) {
            cr_assert_eq(tg_tuner_leave(u, a), 0, "level %d", d);
            cr_assert_eq(u->nocc, 1);
        }
        cr_assert_eq(tg_tuner_leave(u, a), 1);
        cr_assert_eq(u->nocc, 0);
        cr_assert_eq(tg_tuner_decide(u, a, mode), TG_FIRST);
        cr_assert_null(tg_tuner_other(u, a));
    }
}

Test(tuner_table, second_thread_race_in_detect)
{
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_tuner *u = tg_tuner_get(KEY(1));
    cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_DETECT), TG_FIRST);
    enter_outer(u, a, 111);
    tg_tuner_enter(u, a, NULL, NULL, 0, 1); /* a is nested: still a race for b */
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_DETECT), TG_RACE);
    const struct tg_occupant *other = tg_tuner_other(u, b);
    cr_assert_not_null(other);
    cr_assert_eq(other->thread, a);
    cr_assert_eq(other->entered_ns, 111);
    cr_assert_eq(other->tstate, (void *)a);
    cr_assert_eq(other->method, &dummy_method);
    cr_assert_null(tg_tuner_other(u, a), "a is alone from its own view");

    /* b enters anyway (detect), both inside; each sees the other */
    cr_assert_not_null(enter_outer(u, b, 222));
    cr_assert_eq(u->nocc, 2);
    cr_assert_eq(tg_tuner_other(u, a)->thread, b);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_DETECT), TG_NESTED);

    cr_assert_eq(tg_tuner_leave(u, b), 1);
    cr_assert_eq(tg_tuner_leave(u, a), 0);
    cr_assert_eq(tg_tuner_leave(u, a), 1);
    cr_assert_eq(u->nocc, 0);
    cr_assert_eq(u->sessions, 2);
}

Test(tuner_table, second_thread_waits_in_serialize)
{
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_tuner *u = tg_tuner_get(KEY(1));
    enter_outer(u, a, 1);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_SERIALIZE), TG_WAIT);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_DETECT), TG_RACE);
    cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_SERIALIZE), TG_NESTED);
    cr_assert_eq(tg_tuner_leave(u, a), 1);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_SERIALIZE), TG_FIRST);
}

Test(tuner_table, instances_are_independent)
{
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_tuner *u = tg_tuner_get(KEY(1)), *v = tg_tuner_get(KEY(2));
    enter_outer(u, a, 1);
    cr_assert_eq(tg_tuner_decide(v, b, TG_MODE_DETECT), TG_FIRST);
    cr_assert_eq(tg_tuner_decide(v, b, TG_MODE_SERIALIZE), TG_FIRST);
    cr_assert_eq(tg_tuner_decide(v, a, TG_MODE_DETECT), TG_FIRST, "a inside u is not inside v");
}

Test(tuner_table, overflow_beyond_max_occupants)
{
    struct tg_tuner *u = tg_tuner_get(KEY(3));
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        cr_assert_eq(tg_tuner_decide(u, &threads[i], TG_MODE_DETECT), i == 0 ? TG_FIRST : TG_RACE);
        cr_assert_not_null(enter_outer(u, &threads[i], (uint64_t)i), "occupant %d", i);
    }
    struct tg_thread *extra = &threads[TG_TUNER_MAX_OCC], *extra2 = &threads[TG_TUNER_MAX_OCC + 1];
    cr_assert_eq(tg_tuner_decide(u, extra, TG_MODE_DETECT), TG_RACE);
    cr_assert_null(enter_outer(u, extra, 99), "no slot left");
    cr_assert_null(enter_outer(u, extra2, 99));
    cr_assert_eq(u->overflow, 2);
    cr_assert_eq(u->nocc, TG_TUNER_MAX_OCC + 2, "overflowed occupants still count");
    cr_assert_not_null(tg_tuner_other(u, extra));

    /* The overflowed ones leave: counts go back, slotted ones untouched. */
    cr_assert_eq(tg_tuner_leave(u, extra), 1);
    cr_assert_eq(tg_tuner_leave(u, extra2), 1);
    cr_assert_eq(u->overflow, 0);
    cr_assert_eq(u->nocc, TG_TUNER_MAX_OCC);
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        cr_assert_eq(tg_tuner_leave(u, &threads[i]), 1);
    cr_assert_eq(u->nocc, 0);
    cr_assert_eq(tg_tuner_decide(u, extra, TG_MODE_DETECT), TG_FIRST);
    /* A freed slot is reused. */
    cr_assert_not_null(enter_outer(u, extra, 5));
    cr_assert_eq(tg_tuner_leave(u, extra), 1);
}

Test(tuner_table, atfork_child_forgets_occupants_and_waiters)
{
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_tuner *u = tg_tuner_get(KEY(4));
    enter_outer(u, a, 1);
    u->waiters = 1;
    tg_tuner_atfork_child();
    cr_assert_eq(u->nocc, 0);
    cr_assert_eq(u->waiters, 0);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_SERIALIZE), TG_FIRST);
    cr_assert_eq(tg_tuner_get(KEY(4)), u, "entries survive fork");
    cr_assert_eq(pthread_mutex_trylock(&tg_tuner_wait_mu), 0);
    pthread_mutex_unlock(&tg_tuner_wait_mu);
}

/* ---- a real wait and wake-up ------------------------------------------------
 *
 * Thread A is inside u.  Thread B waits as py_guard.c's wait_for_tuner does:
 * waiters++, lock tg_tuner_wait_mu, while (nocc > 0) cond_wait.  B reaches
 * the barrier holding the mutex, so A's tg_tuner_leave (which takes the mutex
 * because waiters > 0) can only proceed once B is parked in cond_wait: if
 * leave did not broadcast, B would never wake.  B waits with a deadline so a
 * missing broadcast fails the test instead of hanging it. */

struct wake {
    struct tg_tuner *u;
    struct tg_thread *a, *b;
    pthread_barrier_t bar;
    int b_timed_out;
    int b_saw_nocc;
    int a_leave_rc;
    int b_verdict_before, b_verdict_after;
};

static void *thread_b(void *arg)
{
    struct wake *w = arg;
    struct tg_tuner *u = w->u;
    /* No cr_assert off the test's main thread: record, check after join. */
    w->b_verdict_before = tg_tuner_decide(u, w->b, TG_MODE_SERIALIZE);
    if (!u->cond_ready) {
        pthread_cond_init(&u->cond, NULL);
        u->cond_ready = 1;
    }
    u->waiters++;
    pthread_mutex_lock(&tg_tuner_wait_mu);
    pthread_barrier_wait(&w->bar); /* A may leave now; its leave blocks on the mutex until we wait */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    while (u->nocc > 0) {
        if (pthread_cond_timedwait(&u->cond, &tg_tuner_wait_mu, &deadline) == ETIMEDOUT) {
            w->b_timed_out = 1;
            break;
        }
    }
    w->b_saw_nocc = u->nocc;
    pthread_mutex_unlock(&tg_tuner_wait_mu);
    u->waiters--;
    if (!w->b_timed_out) {
        w->b_verdict_after = tg_tuner_decide(u, w->b, TG_MODE_SERIALIZE);
        enter_outer(u, w->b, 2);
        tg_tuner_leave(u, w->b);
    }
    return NULL;
}

static void *thread_a(void *arg)
{
    struct wake *w = arg;
    pthread_barrier_wait(&w->bar);
    w->a_leave_rc = tg_tuner_leave(w->u, w->a);
    return NULL;
}

Test(tuner_table, leave_wakes_a_serialize_waiter, .timeout = 30)
{
    static struct wake w;
    w.u = tg_tuner_get(KEY(5));
    w.a = &threads[0];
    w.b = &threads[1];
    pthread_barrier_init(&w.bar, NULL, 2);
    enter_outer(w.u, w.a, 1);
    pthread_t ta, tb;
    pthread_create(&tb, NULL, thread_b, &w);
    pthread_create(&ta, NULL, thread_a, &w);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    cr_assert_eq(w.b_timed_out, 0, "the waiter was never woken: tg_tuner_leave did not broadcast");
    cr_assert_eq(w.a_leave_rc, 1);
    cr_assert_eq(w.b_verdict_before, TG_WAIT);
    cr_assert_eq(w.b_verdict_after, TG_FIRST);
    cr_assert_eq(w.b_saw_nocc, 0);
    cr_assert_eq(w.u->nocc, 0);
    cr_assert_eq(w.u->sessions, 2);
    pthread_barrier_destroy(&w.bar);
}

/* The nested level ending must NOT wake the waiter: only the last level. */
struct nested_wake {
    struct tg_tuner *u;
    struct tg_thread *a;
    pthread_barrier_t bar;
    int woke_early;
};

static void *nested_waiter(void *arg)
{
    struct nested_wake *w = arg;
    struct tg_tuner *u = w->u;
    if (!u->cond_ready) {
        pthread_cond_init(&u->cond, NULL);
        u->cond_ready = 1;
    }
    u->waiters++;
    pthread_mutex_lock(&tg_tuner_wait_mu);
    pthread_barrier_wait(&w->bar);
    while (u->nocc > 0)
        pthread_cond_wait(&u->cond, &tg_tuner_wait_mu);
    pthread_mutex_unlock(&tg_tuner_wait_mu);
    u->waiters--;
    return NULL;
}

Test(tuner_table, nested_leave_keeps_waiter_blocked, .timeout = 30)
{
    static struct nested_wake w;
    w.u = tg_tuner_get(KEY(6));
    w.a = &threads[0];
    pthread_barrier_init(&w.bar, NULL, 2);
    enter_outer(w.u, w.a, 1);
    tg_tuner_enter(w.u, w.a, NULL, NULL, 0, 1);
    pthread_t t;
    pthread_create(&t, NULL, nested_waiter, &w);
    pthread_barrier_wait(&w.bar);
    /* Inner level ends: the waiter must still be blocked (nocc stays 1). */
    cr_assert_eq(tg_tuner_leave(w.u, w.a), 0);
    pthread_mutex_lock(&tg_tuner_wait_mu); /* waiter is parked in cond_wait once we get this */
    cr_assert_eq(w.u->nocc, 1);
    cr_assert_eq(w.u->waiters, 1, "waiter still waiting");
    pthread_mutex_unlock(&tg_tuner_wait_mu);
    cr_assert_eq(tg_tuner_leave(w.u, w.a), 1);
    pthread_join(t, NULL);
    cr_assert_eq(w.u->waiters, 0);
    pthread_barrier_destroy(&w.bar);
}

/* A thread that entered while every occupant slot was taken (overflow) and
 * then makes a nested guarded call (run -> super().run()) is still the same
 * session: depth, not a second race with the others inside. */
Test(tuner_table, overflowed_thread_nesting_is_not_a_race)
{
    struct tg_tuner *u = tg_tuner_get(KEY(7));
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        enter_outer(u, &threads[i], (uint64_t)i);
    struct tg_thread *extra = &threads[TG_TUNER_MAX_OCC];
    cr_assert_null(enter_outer(u, extra, 99));
    cr_assert_eq(tg_tuner_decide(u, extra, TG_MODE_DETECT), TG_NESTED,
                 "the overflowed thread's nested call is reported as a race");
}

/* A long job creates tuners without end (one per generated kernel): a slot is
 * given back when its last occupant leaves with nobody waiting, so the table
 * holds only the tuners in use and never fills. */
Test(tuner_table, slots_are_given_back_after_the_last_leave)
{
    struct tg_thread *a = &threads[0];
    for (uintptr_t k = 0; k < 5 * TG_TUNER_SLOTS; k++) {
        struct tg_tuner *u = tg_tuner_get(KEY(100000 + k));
        cr_assert_not_null(u, "tuner %lu of a long job found no slot", (unsigned long)k);
        cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_DETECT), TG_FIRST);
        cr_assert_not_null(tg_tuner_enter(u, a, NULL, &dummy_method, 1, 0));
        cr_assert_eq(tg_tuner_leave(u, a), 1);
    }
    /* One in use stays put while others come and go. */
    struct tg_tuner *held = tg_tuner_get(KEY(7));
    cr_assert_not_null(tg_tuner_enter(held, a, NULL, &dummy_method, 1, 0));
    for (uintptr_t k = 0; k < 2 * TG_TUNER_SLOTS; k++) {
        struct tg_tuner *u = tg_tuner_get(KEY(900000 + k));
        cr_assert_not_null(u);
        cr_assert_neq(u, held);
        tg_tuner_enter(u, &threads[1], NULL, &dummy_method, 1, 0);
        tg_tuner_leave(u, &threads[1]);
    }
    cr_assert_eq(tg_tuner_get(KEY(7)), held, "the tuner in use kept its entry");
    cr_assert_eq(held->nocc, 1);
}

/* serialize's queue (detectors/tuner_table.h): what the guard does around a
 * wait, step by step.  leave_outer() is the guard's leave of an outermost
 * call; queue() what wait_for_tuner does first for a thread holding nothing. */
static void leave_outer(struct tg_tuner *u, struct tg_thread *t)
{
    cr_assert_eq(tg_tuner_leave(u, t), 1);
    t->nheld--;
}

static uint32_t queue(struct tg_tuner *u)
{
    tg_tuner_pin(u);
    return tg_tuner_take_ticket(u);
}

static void serve(struct tg_tuner *u, struct tg_thread *t, uint32_t ticket, uint64_t waited, uint64_t now)
{
    tg_tuner_served(u, ticket, 1, waited);
    tg_tuner_unpin(u);
    enter_outer(u, t, now);
}

Test(tuner_table, queue_newcomers_go_first_until_a_waiter_starves)
{
    struct tg_thread *a = &threads[0], *b = &threads[1], *c = &threads[2];
    struct tg_tuner *u = tg_tuner_get(KEY(1));
    enter_outer(u, a, 1);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_SERIALIZE), TG_WAIT);
    uint32_t tb = queue(u);
    cr_assert(tg_tuner_must_wait(u, tb, 1));
    leave_outer(u, a);
    /* Free, b queued but not starving: a newcomer may take it (no hand-off). */
    cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_SERIALIZE), TG_FIRST);
    enter_outer(u, a, 2);
    /* b woke, found it taken again after 0.5 ms: not starving yet. */
    tg_tuner_passed_over(u, TG_TUNER_STARVE_NS / 2);
    cr_assert_eq(u->starving, 0);
    /* ... and again after 2 ms: starving. */
    tg_tuner_passed_over(u, 2 * TG_TUNER_STARVE_NS);
    cr_assert_eq(u->starving, 1);
    leave_outer(u, a);
    /* Now a newcomer holding nothing queues, even though the tuner is free ... */
    cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_SERIALIZE), TG_WAIT);
    cr_assert_eq(tg_tuner_decide(u, c, TG_MODE_SERIALIZE), TG_WAIT);
    /* ... detect mode never waits ... */
    cr_assert_eq(tg_tuner_decide(u, c, TG_MODE_DETECT), TG_FIRST);
    /* ... and a thread inside another tuner does not queue (no cycles). */
    struct tg_tuner *v = tg_tuner_get(KEY(2));
    enter_outer(v, c, 3);
    cr_assert_eq(tg_tuner_decide(u, c, TG_MODE_SERIALIZE), TG_FIRST);
    leave_outer(v, c);
    /* a queues behind b; b's turn first. */
    uint32_t ta = queue(u);
    cr_assert_not(tg_tuner_must_wait(u, tb, 1));
    cr_assert(tg_tuner_must_wait(u, ta, 1));
    serve(u, b, tb, 2 * TG_TUNER_STARVE_NS, 4);
    cr_assert_eq(u->starving, 1, "a is still queued and b waited long: still starving");
    cr_assert(tg_tuner_must_wait(u, ta, 1), "a's turn, but b is inside");
    leave_outer(u, b);
    cr_assert_not(tg_tuner_must_wait(u, ta, 1));
    serve(u, a, ta, TG_TUNER_STARVE_NS / 10, 5);
    cr_assert_eq(u->starving, 0, "a waited briefly: back to newcomers first");
    cr_assert(tg_tuner_queue_empty(u));
    leave_outer(u, a);
    cr_assert_eq(u->key, (uintptr_t)1, "nobody inside or waiting: the entry is given back");
}

Test(tuner_table, queue_a_waiter_holding_a_tuner_waits_only_for_free)
{
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_tuner *u = tg_tuner_get(KEY(1)), *v = tg_tuner_get(KEY(2));
    enter_outer(u, a, 1);
    uint32_t tq = queue(u); /* someone holding nothing queued first */
    enter_outer(v, b, 2);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_SERIALIZE), TG_WAIT);
    cr_assert(tg_tuner_must_wait(u, 0, 0));
    leave_outer(u, a);
    cr_assert_not(tg_tuner_must_wait(u, 0, 0), "b holds v: it does not wait for its turn");
    cr_assert(tg_tuner_must_wait(u, tq + 1, 1), "a thread queued after tq does");
    /* b enters without a ticket: starving is not its to clear. */
    u->starving = 1;
    tg_tuner_served(u, 0, 0, 0);
    cr_assert_eq(u->starving, 1);
}

/* The review's case: a pinned waiter (here with a ticket that gets skipped)
 * keeps the entry, so it is never given back and claimed by another tuner
 * under a thread still waiting on it. */
Test(tuner_table, queue_pinned_keeps_the_entry_and_a_lost_head_is_skipped)
{
    struct tg_thread *a = &threads[0], *c = &threads[2];
    struct tg_tuner *u = tg_tuner_get(KEY(1));
    enter_outer(u, a, 1);
    uint32_t gone = queue(u); /* its thread is held up (or will never come) */
    uint32_t mine = queue(u);
    leave_outer(u, a);
    cr_assert_eq(u->key, KEY(1), "waiters keep the entry");
    cr_assert(tg_tuner_must_wait(u, mine, 1));
    tg_tuner_skip_head(u, gone + 1); /* a stale view of the turn: no-op */
    cr_assert(tg_tuner_must_wait(u, mine, 1));
    tg_tuner_skip_head(u, gone);
    cr_assert_not(tg_tuner_must_wait(u, mine, 1));
    serve(u, c, mine, 2 * TG_TUNER_STARVE_NS, 2);
    leave_outer(u, c);
    cr_assert_eq(u->key, KEY(1), "the skipped thread still waits: the entry stays");
    cr_assert_eq(tg_tuner_get(KEY(1)), u);
    cr_assert_not(tg_tuner_must_wait(u, gone, 1), "a skipped ticket may enter whenever the tuner is free");
    serve(u, a, gone, 3 * TG_TUNER_STARVE_NS, 3);
    cr_assert(tg_tuner_queue_empty(u));
    leave_outer(u, a);
    cr_assert_eq(u->key, (uintptr_t)1);
    /* skip_head never moves the turn while someone is inside */
    struct tg_tuner *w = tg_tuner_get(KEY(3));
    enter_outer(w, a, 4);
    uint32_t t0 = queue(w);
    tg_tuner_skip_head(w, t0);
    cr_assert(tg_tuner_must_wait(w, t0, 1));
    cr_assert_eq(w->ticket_turn, t0);
}

Test(tuner_table, atfork_child_resets_the_queue)
{
    struct tg_thread *a = &threads[0];
    struct tg_tuner *u = tg_tuner_get(KEY(1));
    enter_outer(u, a, 1);
    queue(u);
    u->starving = 1;
    u->cond_ready = 1;
    tg_tuner_atfork_child();
    cr_assert_eq(u->pinned, 0);
    cr_assert_eq(u->starving, 0);
    cr_assert_eq(u->ticket_next, u->ticket_turn);
    cr_assert_eq(u->cond_ready, 0, "the next waiter makes the cond again, on the monotonic clock");
}
