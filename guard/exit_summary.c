/* The exit line: one line that sums up what tunerguard reported and what
 * serialize did, at exit or at the interpreter's finalization (the loader
 * asks, loader/py_arm.c, through the core's table), once per process (a
 * fork child says its own).  At finalization the type watches are turned
 * to plain calls first (tg__guard_unwatch_setattr, guard/type_slots.c).
 *
 * Runs at exit or in the audit hook's last event: the GIL held, or no
 * Python thread left; once (an exchange), whichever thread comes first. */
#include "loader/py_arm_internal.h"
#include "reports/emit.h"
#include "reports/report.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/py_lock.h"
#include "core/options.h"
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
    struct tg_emit_stats est;
    tg_emit_stats(&est);
    est.overlaps += tg_tuner_overlaps(); /* counted on the tuners (guard/race_decide.c) */
    const struct tg_emit_stats *es = &est;
    /* A line only when something was reported or the mode changed what the
     * program did (a serialized call); low-severity overlaps alone are the
     * normal life of a tuned kernel called from several threads. */
    if (es->reports == 0 && es->races_seen == 0 && s.waits == 0 && es->prevented_seen == 0)
        return;
    char line[900];
    size_t n = 0;
#define ADD(...) (n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, __VA_ARGS__))
    /* The kinds' parts (the exit column of core/report_kinds.inc), in the
     * order of their parts: FIRST .. LOAD, the serialized calls, SERIALIZE. */
#define TG_EXIT_NONE
#define TG_EXIT(part_, when, n, fmt, ...)                                                          \
    if (part == TG_EXIT_PART_##part_ && (when)) {                                                  \
        unsigned long long c = (n);                                                                \
        ADD(fmt, c, c == 1 ? "" : "s", ##__VA_ARGS__);                                             \
    }
#define TG_REPORT_KIND(ID, json, title, what, body, supp, flags, exit) exit
    enum { TG_EXIT_PART_FIRST, TG_EXIT_PART_LINKED, TG_EXIT_PART_PREVENTED, TG_EXIT_PART_LOAD, TG_EXIT_PART_SERIALIZE };
    for (int part = TG_EXIT_PART_FIRST; part <= TG_EXIT_PART_LOAD; part++) {
#include "core/report_kinds.inc"
    }
    if (s.waits) {
        char kernels[512];
        tg_guard_contended(kernels, sizeof kernels);
        ADD("; %llu call%s serialized, waited %.3f s in total", (unsigned long long)s.waits,
            s.waits == 1 ? "" : "s", (double)s.wait_ns / 1e9);
        if (s.still_waiting)
            ADD(" (%llu still waiting at exit)", (unsigned long long)s.still_waiting);
        if (kernels[0])
            ADD(" (contended: %s)", kernels);
    }
    {
        int part = TG_EXIT_PART_SERIALIZE;
#include "core/report_kinds.inc"
    }
#undef TG_REPORT_KIND
#undef TG_EXIT
#undef TG_EXIT_NONE
    if (es->overlaps)
        ADD("; %llu overlap%s on already tuned keys (low severity%s)", (unsigned long long)es->overlaps,
            es->overlaps == 1 ? "" : "s", tg_opts.verbosity >= 1 ? "" : ", verbosity=1 shows them");
    if (es->capped)
        ADD("; %llu more report%s not written (report_cap=%d)", (unsigned long long)es->capped,
            es->capped == 1 ? "" : "s", tg_opts.report_cap);
    const char *path = tg_sink_text_path();
    if (path[0] && es->reports)
        ADD("; reports in %s", path);
#undef ADD
    /* A part that begins "; " when the race part before it had nothing to
     * say (a serialize run that only prevented races): said first. */
    tg__warn("%s", strncmp(line, "; ", 2) == 0 ? line + 2 : line);
}
