/* serialize's turn in its quiet slices (guard/serialize_wait.h,
 * tg__try_turn / tg__release_turn): inside a slice the holder's release wakes
 * the FIFO's head unless the holder is quiet, that is, its last
 * TG_TURN_QUIET_AFTER returns for the turn each came within
 * TG_TURN_QUIET_GAP_NS of its release; a hand-off always wakes.
 *
 * The head here is a thread record that never runs: a wake-up is its park
 * word changing.  Every release is checked against the rule with the state
 * the holder had just before it, so a preempted test thread (a gap that
 * turned long) changes what is expected, never the verdict. */
#include <criterion/criterion.h>

#include <time.h>

#include "core/thread_state.h"
#include "detectors/tuner_table.h"
#include "guard/serialize_wait.h"

static struct tg_thread head;

static void setup(void)
{
    memset(&tg__turn, 0, sizeof tg__turn);
    head.tid = 999999; /* no such thread; it never takes the turn here */
    head.park = 0;
}

TestSuite(turn_quiet, .init = setup);

/* One call of the holder: take the turn, give it up.  Returns whether the
 * release woke the head; *was_quiet: whether the holder counted as quiet
 * right before that release. */
static int one_call(struct tg_thread *t, int *was_quiet)
{
    cr_assert(tg__try_turn(t), "the turn is free between the holder's calls");
    *was_quiet = tg__gthread(t)->turn_short >= TG_TURN_QUIET_AFTER;
    uint32_t seen = head.park;
    tg__release_turn(t);
    cr_assert_eq(tg__turn.owner, 0, "inside its slice the holder frees the turn");
    return head.park != seen;
}

/* This thread, with no history of returns for the turn, a slice of an
 * hour running and the head waiting. */
static struct tg_thread *contended_holder(void)
{
    struct tg_thread *t = tg__self();
    tg__gthread(t)->turn_short = 0;
    tg__gthread(t)->turn_released_ns = 0;
    tg_tuner_slice_start(&tg__turn, tg_mono_ns(), 3600ull * 1000000000ull, 7200ull * 1000000000ull);
    tg_tuner_wait_push(&tg__turn, &head);
    return t;
}

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

Test(turn_quiet, a_holder_back_at_once_stops_waking_the_head)
{
    struct tg_thread *t = contended_holder();

    int quiet_seen = 0, q;
    for (int i = 0; i < 2000 && quiet_seen < 20; i++) {
        int woke = one_call(t, &q);
        cr_assert_eq(woke, !q, "call %d: a release wakes the head exactly when the holder is not quiet", i);
        quiet_seen += q;
    }
    cr_assert_geq(quiet_seen, 20, "back-to-back calls make the holder quiet");

    /* Other work between two calls: the next release wakes the head again. */
    sleep_ns(5 * (long)TG_TURN_QUIET_GAP_NS);
    cr_assert(one_call(t, &q), "after a long gap the release wakes the head");
    cr_assert_not(q);
    tg_tuner_wait_remove(&tg__turn, &head);
}

Test(turn_quiet, one_long_gap_a_step_is_never_quiet)
{
    struct tg_thread *t = contended_holder();
    /* A step of two tuned calls, then other work: every second gap is long. */
    for (int step = 0; step < 3 * TG_TURN_QUIET_AFTER; step++) {
        int q1, q2;
        cr_assert(one_call(t, &q1), "step %d, first call: the head is woken", step);
        cr_assert(one_call(t, &q2), "step %d, second call: the head is woken", step);
        cr_assert_not(q1 || q2);
        sleep_ns(2 * (long)TG_TURN_QUIET_GAP_NS);
    }
    tg_tuner_wait_remove(&tg__turn, &head);
}

Test(turn_quiet, the_hand_off_at_the_slice_s_end_always_wakes)
{
    struct tg_thread *t = tg__self();
    tg__gthread(t)->turn_short = TG_TURN_QUIET_AFTER; /* quiet */
    tg__gthread(t)->turn_released_ns = 0;
    tg_tuner_wait_push(&tg__turn, &head);
    cr_assert(tg__try_turn(t));
    tg_tuner_slice_start(&tg__turn, 0, 1, 1); /* a slice that ended long ago */
    uint32_t seen = head.park;
    tg__release_turn(t);
    cr_assert_eq(tg__turn.owner, (uint32_t)head.tid, "the slice is over: handed to the head");
    cr_assert_neq(head.park, seen, "and the head is woken to run with it");
    tg_tuner_wait_remove(&tg__turn, &head);
}
