/* The tuner table (detectors/tuner_table.c): nesting is depth, a second
 * thread is a race (detect) or a wait (serialize), leave ends a session only
 * at its last level, occupant overflow, the key -> entry map, fork reset,
 * serialize's lock (CAS, FIFO, wake-one, hand-off when starving), and real
 * wake-ups of parked threads (core/park.h), as guard/serialize_wait.c waits.
 *
 * Criterion runs each test in its own process, so the static table starts
 * empty in every test. */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "detectors/tuner_table.h"
#include "core/options.h"
#include "core/park.h"

static struct tg_thread threads[TG_TUNER_MAX_OCC + 4];
static struct tg_occupant oc; /* tg_tuner_other's copy */
static int dummy_method;

/* Distinct tids, as real threads have (the lock stores the owner's tid). */
__attribute__((constructor)) static void set_tids(void)
{
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++)
        threads[i].tid = (pid_t)(1000 + i);
}

#define KEY(i) ((uintptr_t)0x7f0000001000ull + (uintptr_t)(i) * 0x40)

/* What guard/session.c does on an outermost entry after `verdict`: enter, and
 * push the tuner on the thread's own list of held tuners. */
static struct tg_occupant *enter_outer(struct tg_tuner *u, struct tg_thread *t, uint64_t now)
{
    struct tg_occupant *o = tg_tuner_enter(u, t, (void *)t, &dummy_method, now, 0);
    if (t->nheld < TG_MAX_HELD) {
        t->held[t->nheld] = u;
        t->held_slot[t->nheld] = o ? (uint8_t)(o - u->occ) : 0xff;
    }
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

/* Fill every slot with a tuner someone is inside: all distinct, stable,
 * then the table is full (NULL). */
Test(tuner_table, many_keys_distinct_entries_until_full)
{
    static struct tg_tuner *seen[TG_TUNER_SLOTS];
    for (int i = 0; i < TG_TUNER_SLOTS; i++) {
        seen[i] = tg_tuner_get(KEY(i + 1));
        cr_assert_not_null(seen[i], "key %d", i);
        cr_assert_eq(seen[i]->key, KEY(i + 1));
        cr_assert_not_null(tg_tuner_enter(seen[i], &threads[0], NULL, &dummy_method, 1, 0)); /* in use: never swept */
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
        /* leave returns 1 only when the last level ends */
        for (int d = 5; d >= 2; d--) {
            cr_assert_eq(tg_tuner_leave(u, a), 0, "level %d", d);
            cr_assert_eq(u->nocc, 1);
        }
        cr_assert_eq(tg_tuner_leave(u, a), 1);
        cr_assert_eq(u->nocc, 0);
        cr_assert_eq(tg_tuner_decide(u, a, mode), TG_FIRST);
        cr_assert_null(tg_tuner_other(u, a, &oc));
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
    const struct tg_occupant *other = tg_tuner_other(u, b, &oc);
    cr_assert_not_null(other);
    cr_assert_eq(other->thread, a);
    cr_assert_eq(other->entered_ns, 111);
    cr_assert_eq(other->tstate, (void *)a);
    cr_assert_eq(other->method, &dummy_method);
    cr_assert_null(tg_tuner_other(u, a, &oc), "a is alone from its own view");

    /* b enters anyway (detect), both inside; each sees the other */
    cr_assert_not_null(enter_outer(u, b, 222));
    cr_assert_eq(u->nocc, 2);
    cr_assert_eq(tg_tuner_other(u, a, &oc)->thread, b);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_DETECT), TG_NESTED);

    cr_assert_eq(tg_tuner_leave(u, b), 1);
    cr_assert_eq(tg_tuner_leave(u, a), 0);
    cr_assert_eq(tg_tuner_leave(u, a), 1);
    cr_assert_eq(u->nocc, 0);
}

/* Leaving from the slot tg_tuner_enter gave: that slot only; a slot that
 * is not t's (a wrong hint) is ignored and t's own is found. */
Test(tuner_table, leave_at_own_slot)
{
    struct tg_tuner *u = tg_tuner_get(KEY(77));
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_occupant *oa = enter_outer(u, a, 1);
    struct tg_occupant *ob = enter_outer(u, b, 2);
    cr_assert(oa && ob && oa != ob);
    cr_assert_eq(tg_tuner_leave_at(u, a, ob), 1, "b's slot as a's hint: a's own is left");
    cr_assert_eq(ob->thread, b, "b still inside");
    cr_assert_null(oa->thread);
    cr_assert_eq(u->nocc, 1);
    cr_assert_eq(tg_tuner_leave_at(u, b, ob), 1);
    cr_assert_eq(u->nocc, 0);
}

/* is_inside reads the thread's own held[] while its sessions fit there, and
 * the tuner's slots beyond: inside the last of more tuners than held[] keeps
 * is still nested, and a tuner it never entered is not. */
Test(tuner_table, inside_beyond_held)
{
    struct tg_thread *a = &threads[2];
    struct tg_tuner *us[TG_MAX_HELD + 2];
    for (int i = 0; i < TG_MAX_HELD + 2; i++) {
        us[i] = tg_tuner_get(KEY(200 + i));
        cr_assert_eq(tg_tuner_decide(us[i], a, TG_MODE_DETECT), TG_FIRST);
        cr_assert_not_null(enter_outer(us[i], a, (uint64_t)i));
    }
    for (int i = 0; i < TG_MAX_HELD + 2; i++)
        cr_assert_eq(tg_tuner_decide(us[i], a, TG_MODE_DETECT), TG_NESTED, "tuner %d", i);
    struct tg_tuner *never = tg_tuner_get(KEY(300));
    cr_assert_eq(tg_tuner_decide(never, a, TG_MODE_DETECT), TG_FIRST);
    cr_assert_not_null(enter_outer(never, &threads[3], 1));
    cr_assert_eq(tg_tuner_decide(never, a, TG_MODE_DETECT), TG_RACE, "a has more sessions than held[], none here");
    cr_assert_eq(tg_tuner_decide(us[0], &threads[3], TG_MODE_DETECT), TG_RACE);
}

/* An entry got and never entered (a wait abandoned) is given back once
 * nobody is inside, waiting or owning it, and not before. */
Test(tuner_table, release_if_unused)
{
    struct tg_tuner *u = tg_tuner_get(KEY(600));
    struct tg_thread *a = &threads[4];
    cr_assert_not_null(enter_outer(u, a, 1));
    tg_tuner_release_if_unused(u);
    cr_assert_eq(u->key, KEY(600), "someone inside: kept");
    a->nheld--;
    cr_assert_eq(tg_tuner_leave(u, a), 1);
    cr_assert_eq(u->key, KEY(600), "the last leave leaves it idle, its key kept");
    tg_tuner_release_if_unused(u);
    cr_assert_neq(u->key, KEY(600), "idle and unused: given back");
    struct tg_tuner *v = tg_tuner_get(KEY(601));
    cr_assert(tg_tuner_try_lock(v, (uint32_t)a->tid));
    tg_tuner_release_if_unused(v);
    cr_assert_eq(v->key, KEY(601), "owned: kept");
    tg_tuner_unlock(v, a);
    tg_tuner_release_if_unused(v);
    cr_assert_null(tg_tuner_find(KEY(601)), "unused: given back");
}

Test(tuner_table, second_thread_waits_in_serialize)
{
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_tuner *u = tg_tuner_get(KEY(1));
    cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_SERIALIZE), TG_FIRST);
    cr_assert_eq(u->owner, (uint32_t)a->tid, "TG_FIRST in serialize holds the lock");
    enter_outer(u, a, 1);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_SERIALIZE), TG_WAIT);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_DETECT), TG_RACE);
    cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_SERIALIZE), TG_NESTED);
    cr_assert_null(tg_tuner_unlock(u, b), "only the owner unlocks");
    cr_assert_eq(u->owner, (uint32_t)a->tid);
    cr_assert_null(tg_tuner_unlock(u, a), "nobody to wake");
    cr_assert_eq(u->owner, 0);
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
    cr_assert_eq(tg_tuner_overflow(u), 2);
    cr_assert_eq(u->nocc, TG_TUNER_MAX_OCC + 2, "overflowed occupants still count");
    cr_assert_not_null(tg_tuner_other(u, extra, &oc));

    /* The overflowed ones leave: counts go back, slotted ones untouched. */
    cr_assert_eq(tg_tuner_leave(u, extra), 1);
    cr_assert_eq(tg_tuner_leave(u, extra2), 1);
    cr_assert_eq(tg_tuner_overflow(u), 0);
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
    struct tg_thread *a = &threads[0], *b = &threads[1], *c = &threads[2];
    struct tg_tuner *u = tg_tuner_get(KEY(4));
    cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_SERIALIZE), TG_FIRST);
    enter_outer(u, a, 1);
    tg_tuner_wait_push(u, c);
    u->starving = 1;
    tg_tuner_atfork_child();
    cr_assert_eq(u->nocc, 0);
    cr_assert_eq(u->waiters, 0);
    cr_assert_null(u->wq_head);
    cr_assert_eq(u->owner, 0, "the lock of a thread the child does not have");
    cr_assert_eq(u->starving, 0);
    cr_assert_eq(tg_tuner_decide(u, b, TG_MODE_SERIALIZE), TG_FIRST);
    cr_assert_eq(tg_tuner_get(KEY(4)), u, "entries survive fork");
    /* b enters in the child; a frame of a's from before the fork leaving
     * must not count b out. */
    enter_outer(u, b, 2);
    tg_tuner_leave(u, a);
    cr_assert_eq(u->nocc, 1, "a leave by a thread not counted in gives nothing back");
    cr_assert_not_null(tg_tuner_other(u, a, &oc), "b is still inside");
}

/* ---- the lock: FIFO, wake-one, hand-off ------------------------------------ */

Test(tuner_table, lock_unlock_wakes_the_head_only)
{
    struct tg_thread *a = &threads[0], *b = &threads[1], *c = &threads[2];
    struct tg_tuner *u = tg_tuner_get(KEY(5));
    cr_assert(tg_tuner_try_lock(u, (uint32_t)a->tid));
    cr_assert_not(tg_tuner_try_lock(u, (uint32_t)b->tid));
    tg_tuner_wait_push(u, b);
    tg_tuner_wait_push(u, c);
    cr_assert_eq(u->waiters, 2);
    /* Not starving: the lock is freed, the head is woken, and a newcomer may
     * still take it first (no hand-off per call). */
    cr_assert_eq(tg_tuner_unlock(u, a), b);
    cr_assert_eq(u->owner, 0);
    cr_assert(tg_tuner_try_lock(u, (uint32_t)a->tid), "a newcomer takes a free tuner ahead of the queue");
    /* The woken head found it taken after waiting long: starving.  The next
     * unlock hands it to the head, and nobody else can take it. */
    tg_tuner_passed_over(u, TG_TUNER_STARVE_NS / 2);
    cr_assert_eq(u->starving, 0);
    tg_tuner_passed_over(u, 2 * TG_TUNER_STARVE_NS);
    cr_assert_eq(u->starving, 1);
    cr_assert_eq(tg_tuner_unlock(u, a), b);
    cr_assert_eq(u->owner, (uint32_t)b->tid, "handed to the head");
    cr_assert_not(tg_tuner_try_lock(u, (uint32_t)a->tid), "a newcomer must queue while starving");
    cr_assert_not(tg_tuner_try_lock(u, (uint32_t)c->tid), "so must a waiter behind the head");
    cr_assert(tg_tuner_try_lock(u, (uint32_t)b->tid), "the head holds it");
    /* b waited long and c is still queued: still starving after b enters. */
    tg_tuner_served(u, 2 * TG_TUNER_STARVE_NS);
    tg_tuner_wait_remove(u, b);
    cr_assert_eq(u->starving, 1);
    cr_assert_eq(u->wq_head, c);
    cr_assert_eq(tg_tuner_unlock(u, b), c);
    cr_assert_eq(u->owner, (uint32_t)c->tid);
    /* The last waiter ends starving. */
    tg_tuner_served(u, 2 * TG_TUNER_STARVE_NS);
    tg_tuner_wait_remove(u, c);
    cr_assert_eq(u->starving, 0);
    cr_assert_eq(u->waiters, 0);
    cr_assert_null(u->wq_head);
    cr_assert_null(u->wq_tail);
    cr_assert_null(tg_tuner_unlock(u, c));
    cr_assert_eq(u->owner, 0);
}

/* Slices (the turn's rule): the holder keeps the lock, taking it back after
 * each unlock, until its slice is over; then the unlock hands it to the
 * head, whose own slice starts when it gets it. */
Test(tuner_table, slices_hand_over_when_the_holder_s_slice_ends)
{
    struct tg_thread *a = &threads[0], *b = &threads[1], *c = &threads[2];
    struct tg_tuner *u = tg_tuner_get(KEY(6));
    const uint64_t ms = 1000000ull, slice = 5 * ms, fifo = 50 * ms;
    cr_assert(tg_tuner_try_lock(u, (uint32_t)a->tid));
    /* b starts waiting at t = 100 ms: a's slice runs to 105. */
    tg_tuner_slice_start(u, 100 * ms, slice, fifo);
    tg_tuner_wait_push(u, b);
    tg_tuner_slice_check(u, a, 101 * ms);
    cr_assert_eq(tg_tuner_unlock(u, a), b, "the head is woken at every unlock");
    cr_assert_eq(u->owner, 0, "within its slice the holder frees the lock");
    cr_assert(tg_tuner_try_lock(u, (uint32_t)a->tid), "and takes it back when it comes back first");
    tg_tuner_slice_check(u, a, 104 * ms);
    cr_assert_eq(tg_tuner_unlock(u, a), b);
    cr_assert_eq(u->owner, 0);
    cr_assert(tg_tuner_try_lock(u, (uint32_t)a->tid));
    tg_tuner_slice_check(u, b, 106 * ms); /* past a's slice, but b does not hold it */
    cr_assert_eq(u->starving, 0, "only the holder's release ends its slice");
    tg_tuner_wait_push(u, c);
    tg_tuner_slice_check(u, a, 105 * ms);
    cr_assert_eq(tg_tuner_unlock(u, a), b);
    cr_assert_eq(u->owner, (uint32_t)b->tid, "the slice is over: handed to the head");
    cr_assert_not(tg_tuner_try_lock(u, (uint32_t)a->tid), "the old holder queues");
    cr_assert(tg_tuner_try_lock(u, (uint32_t)b->tid));
    tg_tuner_wait_remove(u, b);
    /* b's slice: from when it got the lock (c waiting: 50 ms / 2 > 5 ms, so
     * 5 ms); a, back for its next call, queues behind c. */
    tg_tuner_slice_start(u, 106 * ms, slice, fifo);
    tg_tuner_wait_push(u, a);
    cr_assert_eq(u->starving, 0);
    tg_tuner_slice_check(u, b, 110 * ms);
    cr_assert_eq(tg_tuner_unlock(u, b), c);
    cr_assert_eq(u->owner, 0);
    cr_assert(tg_tuner_try_lock(u, (uint32_t)b->tid));
    tg_tuner_slice_check(u, b, 111 * ms);
    cr_assert_eq(tg_tuner_unlock(u, b), c);
    cr_assert_eq(u->owner, (uint32_t)c->tid, "FIFO order: c, then a");
    tg_tuner_wait_remove(u, c);
    /* Many waiters: the slice shrinks so that the FIFO is served within fifo. */
    u->waiters = 19;
    tg_tuner_slice_start(u, 200 * ms, slice, fifo);
    cr_assert_eq(u->slice_end, 200 * ms + fifo / 20);
    u->waiters = 1;
    /* Nobody waiting: no hand-off, whatever the time (and a flag left set
     * by an abandoned wait is cleared). */
    tg_tuner_wait_remove(u, a);
    u->starving = 1;
    tg_tuner_slice_check(u, c, 900 * ms);
    cr_assert_eq(u->starving, 0, "no waiter: nothing to hand over to");
    cr_assert_null(tg_tuner_unlock(u, c));
    cr_assert_eq(u->owner, 0);
}

Test(tuner_table, wait_remove_from_the_middle)
{
    struct tg_tuner *u = tg_tuner_get(KEY(6));
    for (int i = 0; i < 4; i++)
        tg_tuner_wait_push(u, &threads[i]);
    tg_tuner_wait_remove(u, &threads[2]);
    tg_tuner_wait_remove(u, &threads[0]);
    tg_tuner_wait_remove(u, &threads[7]); /* not in it: no-op */
    cr_assert_eq(u->waiters, 2);
    cr_assert_eq(u->wq_head, &threads[1]);
    cr_assert_eq(u->wq_head->wait_next, &threads[3]);
    cr_assert_eq(u->wq_tail, &threads[3]);
    tg_tuner_wait_push(u, &threads[5]);
    cr_assert_eq(u->wq_tail, &threads[5]);
    cr_assert_eq(threads[3].wait_next, &threads[5]);
}

/* A slot is not given back while someone owns its lock or waits for it. */
Test(tuner_table, slot_kept_while_owned_or_awaited)
{
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_tuner *u = tg_tuner_get(KEY(8));
    cr_assert_eq(tg_tuner_decide(u, a, TG_MODE_SERIALIZE), TG_FIRST);
    enter_outer(u, a, 1);
    tg_tuner_wait_push(u, b);
    cr_assert_eq(tg_tuner_unlock(u, a), b);
    cr_assert_eq(tg_tuner_leave(u, a), 1);
    cr_assert_eq(u->key, KEY(8), "b waits: the slot stays");
    cr_assert(tg_tuner_try_lock(u, (uint32_t)b->tid));
    tg_tuner_wait_remove(u, b);
    cr_assert_eq(tg_tuner_get(KEY(8)), u);
}

static int alive_none(pid_t tid)
{
    (void)tid;
    return 0;
}

/* The slots' directory (occ_tid) says exactly which slots are in use, after
 * every way in and out: enter, nested levels, leave, the reap, fork. */
static void check_directory(const struct tg_tuner *u)
{
    int used = 0;
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        cr_assert_eq(u->occ_tid[i] != 0, u->occ[i].thread != NULL, "slot %d", i);
        if (u->occ[i].thread)
            cr_assert_eq(u->occ_tid[i], u->occ[i].tid, "slot %d", i);
        used += u->occ[i].thread != NULL;
    }
    cr_assert_eq(used, u->nocc - tg_tuner_overflow(u));
}

static pid_t dead_tid;
static int alive_but_one(pid_t tid)
{
    return tid != dead_tid;
}

Test(tuner_table, directory_follows_the_slots)
{
    struct tg_tuner *u = tg_tuner_get(KEY(500));
    check_directory(u);
    for (int i = 0; i < 4; i++) {
        cr_assert_not_null(enter_outer(u, &threads[i], (uint64_t)i));
        check_directory(u);
    }
    tg_tuner_enter(u, &threads[1], NULL, NULL, 0, 1); /* nested */
    check_directory(u);
    cr_assert_eq(tg_tuner_leave(u, &threads[1]), 0);
    check_directory(u);
    cr_assert_eq(tg_tuner_leave(u, &threads[1]), 1);
    check_directory(u);
    cr_assert(tg_tuner_other(u, &threads[0], &oc) != NULL && tg_tuner_other(u, &threads[0], &oc)->thread != &threads[0]);
    dead_tid = threads[2].tid;
    pid_t dead[4];
    unsigned long ident[4];
    struct tg_thread *wake;
    cr_assert_eq(tg_tuner_reap(u, alive_but_one, dead, ident, 4, &wake), 1);
    cr_assert_eq(dead[0], threads[2].tid);
    check_directory(u);
    /* a freed slot is taken again, and the directory with it */
    cr_assert_not_null(enter_outer(u, &threads[5], 9));
    check_directory(u);
    tg_tuner_atfork_child();
    check_directory(u);
    cr_assert_eq(u->nocc, 0);
}

Test(tuner_table, reap_frees_the_lock_of_a_dead_owner)
{
    struct tg_thread *a = &threads[0], *b = &threads[1];
    struct tg_tuner *u = tg_tuner_get(KEY(9));
    cr_assert(tg_tuner_try_lock(u, (uint32_t)a->tid));
    enter_outer(u, a, 1);
    tg_tuner_wait_push(u, b);
    pid_t dead[4];
    unsigned long ident[4];
    struct tg_thread *wake = NULL;
    cr_assert_eq(tg_tuner_reap(u, alive_none, dead, ident, 4, &wake), 1);
    cr_assert_eq(dead[0], a->tid);
    cr_assert_eq(u->nocc, 0);
    cr_assert_eq(u->owner, 0);
    cr_assert_eq(wake, b, "the head is woken for the freed lock");
}

/* ---- real waits and wake-ups (core/park.h) ----------------------------------
 *
 * Each waiter does what guard/serialize_tuner_wait.c's tg__wait_for_tuner does without the
 * GIL: read its park word, try the lock, park, and try again when woken.  A
 * holder unlocks and wakes the head (tg_tuner_unlock + tg_park_wake).  With
 * several waiters every unlock must wake one, and each waiter must end up
 * holding the lock exactly once: an unlock that woke nobody, or woke a
 * thread that then found the lock free but did not take it, leaves a waiter
 * parked and the test fails on its time-out instead of hanging.  The FIFO is
 * under a mutex here (the GIL's part). */

#define NWAITERS 5
static pthread_mutex_t gil = PTHREAD_MUTEX_INITIALIZER;
static struct tg_tuner *shared_u;
static int served[NWAITERS];
static int timed_out_waiters;
static pthread_barrier_t queued_bar;

static void *lock_waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    struct tg_thread *t = &threads[1 + i];
    pthread_mutex_lock(&gil);
    tg_tuner_wait_push(shared_u, t);
    pthread_mutex_unlock(&gil);
    pthread_barrier_wait(&queued_bar);
    for (;;) {
        uint32_t seen = __atomic_load_n(&t->park, __ATOMIC_ACQUIRE);
        if (tg_tuner_try_lock(shared_u, (uint32_t)t->tid))
            break;
        /* No polling: only a wake-up (or a changed word) gets it going. */
        if (tg_park_wait(&t->park, seen, 10000000000ull) == ETIMEDOUT) {
            __atomic_add_fetch(&timed_out_waiters, 1, __ATOMIC_SEQ_CST);
            return NULL;
        }
    }
    /* holding it: "run", then leave as the guard does */
    pthread_mutex_lock(&gil);
    tg_tuner_served(shared_u, 0);
    tg_tuner_wait_remove(shared_u, t);
    served[i]++;
    struct tg_thread *w = tg_tuner_unlock(shared_u, t);
    pthread_mutex_unlock(&gil);
    if (w)
        tg_park_wake(&w->park);
    return NULL;
}

Test(tuner_table, every_unlock_wakes_one_waiter_and_all_are_served, .timeout = 60)
{
    struct tg_thread *a = &threads[0];
    shared_u = tg_tuner_get(KEY(10));
    cr_assert(tg_tuner_try_lock(shared_u, (uint32_t)a->tid));
    pthread_barrier_init(&queued_bar, NULL, NWAITERS + 1);
    pthread_t th[NWAITERS];
    for (int i = 0; i < NWAITERS; i++)
        pthread_create(&th[i], NULL, lock_waiter, (void *)(intptr_t)i);
    pthread_barrier_wait(&queued_bar); /* all queued (they may not be parked yet: the word covers that) */
    pthread_mutex_lock(&gil);
    struct tg_thread *w = tg_tuner_unlock(shared_u, a);
    pthread_mutex_unlock(&gil);
    cr_assert_not_null(w, "waiters are queued: unlock names one to wake");
    tg_park_wake(&w->park);
    for (int i = 0; i < NWAITERS; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(timed_out_waiters, 0, "a waiter was never woken");
    for (int i = 0; i < NWAITERS; i++)
        cr_assert_eq(served[i], 1, "waiter %d held the lock %d times", i, served[i]);
    cr_assert_eq(shared_u->owner, 0);
    cr_assert_eq(shared_u->waiters, 0);
}

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

/* A long job creates tuners without end (one per generated kernel): a slot
 * whose last occupant left with nobody waiting stays idle, keeping its key,
 * until a claim finds the table three quarters full and gives the idle ones
 * back, so the table never fills with tuners nobody is in. */
Test(tuner_table, idle_slots_are_given_back_before_the_table_fills)
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


/* Idle entries stay until a claim finds the table three quarters full; that
 * claim gives every idle one back and none that someone is inside. */
Test(tuner_table, sweep_gives_back_idle_entries_only)
{
    struct tg_thread *a = &threads[0];
    struct tg_tuner *busy = tg_tuner_get(KEY(5));
    cr_assert_not_null(tg_tuner_enter(busy, a, NULL, &dummy_method, 1, 0));
    const int n = TG_TUNER_SLOTS / 4 * 3 - 1; /* with busy: one short of the sweep */
    for (int i = 0; i < n; i++) {
        struct tg_tuner *u = tg_tuner_get(KEY(20000 + i));
        cr_assert_not_null(u);
        tg_tuner_enter(u, &threads[1], NULL, &dummy_method, 1, 0);
        tg_tuner_leave(u, &threads[1]);
    }
    cr_assert_not_null(tg_tuner_find(KEY(20000)), "idle, below the sweep: kept");
    cr_assert_not_null(tg_tuner_find(KEY(20000 + n - 1)));
    struct tg_tuner *u = tg_tuner_get(KEY(90000)); /* the claim at three quarters */
    cr_assert_not_null(u);
    cr_assert_null(tg_tuner_find(KEY(20000)), "idle: given back by the sweep");
    cr_assert_null(tg_tuner_find(KEY(20000 + n - 1)));
    cr_assert_eq(tg_tuner_find(KEY(5)), busy, "someone inside: kept");
    cr_assert_eq(busy->nocc, 1);
    cr_assert_eq(tg_tuner_get(KEY(90000)), u);
}

/* Overlaps are counted on the tuner an entry writes anyway, and stay with
 * its slot when the entry is given back (the last leave, release when
 * unused); the process's count sums the slots; a fork child starts from none. */
Test(tuner_table, overlaps_survive_give_back_and_reset_at_fork)
{
    struct tg_thread *a = &threads[0];
    struct tg_tuner *u = tg_tuner_get(KEY(31));
    struct tg_tuner *v = tg_tuner_get(KEY(32));
    enter_outer(u, a, 1);
    u->overlaps += 3;
    v->overlaps += 2;
    cr_assert_eq(tg_tuner_overlaps(), 5);
    tg_tuner_release_if_unused(v); /* nobody inside v: given back */
    cr_assert_eq(tg_tuner_find(KEY(32)), NULL);
    cr_assert_eq(tg_tuner_overlaps(), 5, "v's two kept when its entry went");
    cr_assert_eq(tg_tuner_leave(u, a), 1);
    a->nheld = 0;
    cr_assert_eq(tg_tuner_find(KEY(31)), u, "u idle after its last leave: its key kept");
    cr_assert_eq(tg_tuner_get(KEY(31)), u, "and found at once when its tuner is called again");
    cr_assert_eq(u->overlaps, 3);
    cr_assert_eq(tg_tuner_overlaps(), 5);
    /* A key that takes a given-back slot (v's own key, back to its home, a
     * tomb now) finds the slot's count there: the total is the process's,
     * and the reuse counts nothing twice and loses nothing. */
    struct tg_tuner *w = tg_tuner_get(KEY(32));
    cr_assert_eq(w, v, "v's key takes v's slot back");
    cr_assert_eq(tg_tuner_overlaps(), 5);
    w->overlaps += 1;
    cr_assert_eq(tg_tuner_overlaps(), 6);
    tg_tuner_atfork_child();
    cr_assert_eq(tg_tuner_overlaps(), 0, "the parent's overlaps are the parent's to count");
}

/* A thread takes the slot of its tid when it is free, and comes back to it,
 * so that a loop of entries writes the same line each time; taken, the next
 * free one. */
Test(tuner_table, a_thread_keeps_its_own_slot)
{
    struct tg_tuner *u = tg_tuner_get(KEY(41));
    struct tg_thread *a = &threads[3], *b = &threads[3 + TG_TUNER_MAX_OCC]; /* same tid % slots */
    const int mine = a->tid % TG_TUNER_MAX_OCC;
    for (int i = 0; i < 3; i++) {
        struct tg_occupant *o = tg_tuner_enter(u, a, NULL, &dummy_method, 1, 0);
        cr_assert_eq(o - u->occ, mine, "round %d", i);
        if (i < 2)
            cr_assert_eq(tg_tuner_leave(u, a), 1);
    }
    struct tg_occupant *ob = tg_tuner_enter(u, b, NULL, &dummy_method, 2, 0);
    cr_assert_eq(ob - u->occ, (mine + 1) % TG_TUNER_MAX_OCC, "its own slot taken: the next");
    cr_assert_eq(u->occ_tid[mine], a->tid);
    cr_assert_eq(u->occ_tid[(mine + 1) % TG_TUNER_MAX_OCC], b->tid);
}

/* The occupants' evidence on the directory's line: what an entering thread
 * reads for its overlap's severity.  Set at entry from the record, by the
 * occupant on every tuner it holds, cleared when the slot is; untracked for
 * a session nested deeper than held[]. */
static uint8_t ev_of(const struct tg_tuner *u, const struct tg_thread *t)
{
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        if (u->occ_tid[i] == t->tid)
            return u->occ_ev[i];
    return 0xff;
}

Test(tuner_table, evidence_on_the_directory)
{
    struct tg_thread *a = &threads[0], *b = &threads[1], *c = &threads[2];
    struct tg_tuner *u = tg_tuner_get(KEY(51)), *v = tg_tuner_get(KEY(52));
    a->nheld = b->nheld = c->nheld = 0;
    enter_outer(u, a, 1);
    enter_outer(v, a, 2); /* a holds u and v */
    enter_outer(u, b, 3);
    cr_assert_eq(ev_of(u, a) | ev_of(u, b) | ev_of(v, a), 0, "nobody shows evidence yet");
    tg_tuner_mark_evidence(a, TG_EV_LAUNCHES);
    cr_assert_eq(ev_of(u, a), TG_EV_LAUNCHES);
    cr_assert_eq(ev_of(v, a), TG_EV_LAUNCHES, "marked on every tuner a holds");
    cr_assert_eq(ev_of(u, b), 0, "b's slot untouched");
    tg_tuner_mark_evidence(a, TG_EV_TUNING);
    cr_assert_eq(ev_of(u, a), TG_EV_LAUNCHES | TG_EV_TUNING, "bits add up");
    /* Entered with evidence in the record: set at entry. */
    c->session_syncs = 1;
    enter_outer(u, c, 4);
    cr_assert_eq(ev_of(u, c), TG_EV_TUNING);
    c->session_syncs = 0;
    /* Cleared with the slot. */
    cr_assert_eq(tg_tuner_leave(v, a), 1);
    cr_assert_eq(tg_tuner_leave(u, a), 1);
    a->nheld = 0;
    struct tg_occupant *o = enter_outer(u, a, 5);
    cr_assert_eq(u->occ_ev[o - u->occ], 0, "a new session starts clean");
}

/* Deeper than held[] keeps: the slot cannot be marked later, so it says so. */
Test(tuner_table, evidence_untracked_beyond_held)
{
    struct tg_thread *a = &threads[0];
    a->nheld = 0;
    for (int i = 0; i < TG_MAX_HELD; i++)
        enter_outer(tg_tuner_get(KEY(200 + i)), a, 1);
    struct tg_tuner *deep = tg_tuner_get(KEY(300));
    enter_outer(deep, a, 2);
    cr_assert_eq(ev_of(deep, a), TG_EV_UNTRACKED);
    cr_assert_eq(ev_of(tg_tuner_get(KEY(200 + TG_MAX_HELD - 1)), a), 0, "the last tracked one is not");
    tg_tuner_mark_evidence(a, TG_EV_TUNING);
    cr_assert_eq(ev_of(deep, a), TG_EV_UNTRACKED, "not reached: the record is read for it");
    cr_assert_eq(ev_of(tg_tuner_get(KEY(200)), a), TG_EV_TUNING);
}

/* A fork child keeps the parent's entries (their keys) but none of what the
 * parent's serialize noted on them: its contended list starts empty, so a
 * tuner noted there must be noted again in the child. */
Test(tuner_table, fork_child_forgets_serialize_notes)
{
    struct tg_tuner *u = tg_tuner_get(KEY(41));
    enter_outer(u, &threads[0], 1);
    u->noted = 1;
    u->waits = 3;
    u->wait_ns = 1000;
    tg_tuner_atfork_child();
    cr_assert_eq(tg_tuner_find(KEY(41)), u, "the entry stays");
    cr_assert_eq(u->nocc, 0);
    cr_assert_eq(u->noted, 0);
    cr_assert_eq(u->waits, 0);
    cr_assert_eq(u->wait_ns, 0);
}

/* The entry lock (tuner_table.h, "The entry lock"), on in a free-threaded
 * build only.  A second thread that wants it while it is held parks (the
 * word goes to 2) and gets it only after the unlock. */
static struct tg_tuner *lock_u;
static int lock_got;

static void *lock_second(void *arg)
{
    (void)arg;
    tg_tuner_entry_lock(lock_u);
    __atomic_store_n(&lock_got, 1, __ATOMIC_SEQ_CST);
    tg_tuner_entry_unlock(lock_u);
    return NULL;
}

Test(tuner_table, entry_lock_parks_second_until_unlock)
{
    tg_py.free_threaded = 1;
    lock_u = tg_tuner_get(KEY(40));
    tg_tuner_entry_lock(lock_u);
    cr_assert_eq(lock_u->lock, 1);
    pthread_t th;
    pthread_create(&th, NULL, lock_second, NULL);
    /* Until the second thread has said it parks (or, broken, got in). */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &now);
    while (__atomic_load_n(&lock_u->lock, __ATOMIC_SEQ_CST) != 2 && !__atomic_load_n(&lock_got, __ATOMIC_SEQ_CST) &&
           now.tv_sec - t0.tv_sec < 10);
    cr_assert_eq(__atomic_load_n(&lock_got, __ATOMIC_SEQ_CST), 0, "the second thread got in while it was held");
    cr_assert_eq(__atomic_load_n(&lock_u->lock, __ATOMIC_SEQ_CST), 2, "the second thread parks");
    tg_tuner_entry_unlock(lock_u); /* wakes it */
    pthread_join(th, NULL);
    cr_assert_eq(lock_got, 1);
    cr_assert_eq(lock_u->lock, 0);
}

/* Four threads add to a plain counter under the lock: no update lost (and,
 * under ThreadSanitizer, no race reported on it). */
#define LOCK_ROUNDS 20000
static uint64_t lock_count;

static void *lock_adder(void *arg)
{
    (void)arg;
    for (int i = 0; i < LOCK_ROUNDS; i++) {
        tg_tuner_entry_lock(lock_u);
        uint64_t v = lock_count;
        if (i % 64 == 0)
            sched_yield(); /* held across a switch now and then: others spin out and park */
        lock_count = v + 1;
        tg_tuner_entry_unlock(lock_u);
    }
    return NULL;
}

Test(tuner_table, entry_lock_counts_every_update)
{
    tg_py.free_threaded = 1;
    lock_u = tg_tuner_get(KEY(41));
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, lock_adder, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(lock_count, 4ull * LOCK_ROUNDS);
    cr_assert_eq(lock_u->lock, 0);
}

/* With a GIL (not a free-threaded build) the lock is not taken at all. */
Test(tuner_table, entry_lock_off_with_a_gil)
{
    tg_py.free_threaded = 0;
    struct tg_tuner *u = tg_tuner_get(KEY(42));
    tg_tuner_entry_lock(u);
    cr_assert_eq(u->lock, 0);
    tg_tuner_entry_unlock(u);
    cr_assert_eq(u->lock, 0);
}
