/* The exit line's facts, gathered at exit or at the interpreter's
 * finalization (the loader asks, loader/py_arm.c, through the core's table),
 * once per process (a fork child says its own); the line itself is
 * reports/exit_line.c's.  At finalization the type watches are turned
 * to plain calls first (tg__guard_unwatch_setattr, guard/type_slots.c).
 *
 * Runs at exit or in the audit hook's last event: the GIL held, or no
 * Python thread left; once (an exchange), whichever thread comes first. */
#include "loader/py_arm_internal.h"
#include "reports/emit.h"
#include "reports/exit_line.h"
#include "core/clock.h"
#include "core/py_lock.h"
#include "guard/install_internal.h"
#include "guard/py_guard.h"
#include "detectors/tuner_table.h"

#include <stdio.h>
#include <string.h>

static int summary_done; /* an exchange: the line once */

void tg_guard_stats(struct tg_guard_stats *out)
{
    /* Each count whole (relaxed atomics: serialize_wait.c's TG_GSTAT_ADD);
     * a wait that begins or ends meanwhile may be seen half counted, which
     * moves the line's total by that one wait. */
    out->waits = __atomic_load_n(&tg__gstats.waits, __ATOMIC_RELAXED);
    out->wait_ns = __atomic_load_n(&tg__gstats.wait_ns, __ATOMIC_RELAXED);
    out->guards = __atomic_load_n(&tg__gstats.guards, __ATOMIC_RELAXED);
    out->waiting = __atomic_load_n(&tg__gstats.waiting, __ATOMIC_RELAXED);
    out->waiting_t0_sum = __atomic_load_n(&tg__gstats.waiting_t0_sum, __ATOMIC_RELAXED);
    out->waiting_calls = __atomic_load_n(&tg__gstats.waiting_calls, __ATOMIC_RELAXED);
    out->still_waiting = 0;
    if (out->waiting) { /* waits not over: their time until now */
        out->wait_ns += out->waiting * tg_mono_ns() - out->waiting_t0_sum;
        out->waits += out->waiting_calls;
        out->still_waiting = out->waiting;
    }
}

void tg_arm_atfork_child(void)
{
    summary_done = 0;
    tg_py_lock_atfork_child(&tg__arm_lock); /* a parent's thread arming or installing at the fork */
}

void tg__arm_finalizing_core(void)
{
    tg__guard_unwatch_setattr();
    tg__arm_exit_summary_core();
}

void tg__arm_exit_summary_core(void)
{
    if (__atomic_load_n(&summary_done, __ATOMIC_RELAXED) || __atomic_exchange_n(&summary_done, 1, __ATOMIC_ACQ_REL))
        return;
    tg_emit_flush_repeats(); /* the repeat counts, before the line that sums them up */
    struct tg_guard_stats s = {0};
    if (tg_guard_count() > 0) /* else no guarded call, no wait: not even a look */
        tg_guard_stats(&s);
    struct tg_exit_facts f = {.waits = s.waits, .wait_ns = s.wait_ns, .still_waiting = s.still_waiting};
    tg_emit_stats(&f.es);
    f.es.overlaps += tg_tuner_overlaps(); /* counted on the tuners (guard/race_decide.c) */
    char kernels[512] = "";
    if (s.waits)
        tg_guard_contended(kernels, sizeof kernels);
    f.contended = kernels;
    tg_exit_line(&f); /* reports/exit_line.c */
}
