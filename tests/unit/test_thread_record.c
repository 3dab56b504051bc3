/* The per-thread record's two owners in a fork child: core's step
 * (tg__thread_atfork_child: nothing held, no session counts) and the
 * guard's (tg__gthread_atfork_child, guard/guard_thread.h: the fork
 * counted, a slotless session's link forgotten), in the order
 * guard/lifecycle.c's fork-child handler calls them.  A guarded frame
 * entered before the fork gives nothing back only when it sees the count
 * changed (guard/session.c); the child's copy of the forking thread keeps
 * what its stack counts itself (busy, tuning). */
#include <criterion/criterion.h>

#include "core/thread_state.h"
#include "guard/guard_thread.h"

Test(thread_record, fork_child_counts_the_fork_in_the_guards_part)
{
    struct tg_thread *t = tg__self();
    struct tg_guard_thread *gt = tg__gthread(t);
    const unsigned forks = gt->forks;
    t->nheld = 2;
    t->depth = 3;
    t->busy = 1;
    t->tuning = 1;
    t->lazy_inst = 0x1000;
    gt->ovf_raced_tid = 4242;
    gt->ovf_inst = 0x2000;

    tg__thread_atfork_child();
    tg__gthread_atfork_child();

    cr_assert_eq(gt->forks, forks + 1, "the fork is counted: frames from before it see it");
    cr_assert_eq(gt->ovf_raced_tid, 0, "a parent's race names no thread of the child");
    cr_assert_eq(gt->ovf_inst, 0);
    cr_assert_eq(t->nheld, 0);
    cr_assert_eq(t->depth, 0);
    cr_assert_eq(t->lazy_inst, 0);
    cr_assert_eq(t->busy, 1, "counted in and out by frames that go on in the child");
    cr_assert_eq(t->tuning, 1);
    cr_assert_eq(t->is_main, 1, "the forking thread is the child's main thread");
}

/* The guard's part is the record's, at its tail: another thread reaches it
 * from the record pointer a tuner entry holds. */
Test(thread_record, guard_part_is_inside_the_record)
{
    struct tg_thread *t = tg__self();
    const char *gt = (const char *)tg__gthread(t);
    cr_assert(gt >= (const char *)t && gt + sizeof(struct tg_guard_thread) <= (const char *)(t + 1));
    cr_assert_eq((uintptr_t)gt % 64, 0, "on a line of its own");
    const struct tg_thread *ct = t;
    cr_assert_eq((const void *)tg__gthread(ct), (const void *)gt, "the same part through a const record");
}
