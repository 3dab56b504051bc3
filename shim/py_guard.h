/* Guarded methods: C callables that replace a tuner's Python method and
 * bracket every call with enter/leave on the tuner table.
 *
 * All functions: GIL held. */
#ifndef TG_PY_GUARD_H
#define TG_PY_GUARD_H

#include "core/py_api.h"
#include <stdint.h>

/* Replace cls.<name> (found in cls's own __dict__) with a guard.  Returns 1
 * if a guard was installed, 0 if there was nothing to guard (absent, already
 * guarded, not a plain function), -1 on error (one warning printed). */
int tg_guard_install(PyObject *cls, const char *name, const char *why);

/* Mark the tuning methods of a built-in tuner class (Autotuner._bench,
 * prune_configs, check_disk_cache; CachingAutotuner.benchmark_all_configs,
 * ...): a call of one counts its thread as tuning, with no session of its
 * own, so severity needs no walk of that thread's frames.  GIL held. */
void tg_guard_install_markers(PyObject *cls);

/* Is `value` a guard object tunerguard made? */
int tg_guard_is_ours(PyObject *value);

/* Counts for the exit summary. */
struct tg_guard_stats {
    uint64_t races;        /* race reports written (after de-duplication) */
    uint64_t races_seen;   /* races seen, repeats included */
    uint64_t prevented;    /* serialize: race reports of races a wait prevented (high severity) */
    uint64_t prevented_seen;   /* ... repeats included */
    uint64_t prevented_reports; /* reports of prevented races or overlaps (any severity): they
                                   leave exitcode= alone unless prevented_is_race=1 */
    uint64_t overlaps;     /* low-severity overlaps (already tuned key) */
    uint64_t exceptions;   /* exceptions linked to a race */
    uint64_t deadlocks;    /* cycles of serialized waits broken */
    uint64_t wait_timeouts;/* waits longer than wait_timeout */
    uint64_t holders_died; /* threads that died inside a tuner, holds released */
    uint64_t reports;      /* reports written, all kinds: the next seq */
    uint64_t waits;        /* serialized calls */
    uint64_t wait_ns;      /* total time they waited */
    int guards;            /* methods guarded */
};
void tg_guard_stats(struct tg_guard_stats *out);
/* In a fork child: forget the parent's counts (the child reports its own). */
void tg_guard_atfork_child(void);
/* Kernels that were contended (serialize mode), comma separated, into buf. */
void tg_guard_contended(char *buf, int len);

/* Serializes the filling and writing of reports.  Filling a report calls
 * Python (names, frames) and so can let other threads run: the GIL alone does
 * not keep two reports apart.  tg_report_lock() takes the lock without ever
 * blocking while holding the GIL (it releases the GIL while it waits), so a
 * reporter that gave up the GIL mid-report can always finish.  GIL held on
 * entry and exit of both.  Not for signal handlers. */
void tg_report_lock(void);
void tg_report_unlock(void);

/* Monotonic nanoseconds, cheap (TSC-based where available). */
uint64_t tg_now_ns(void);

#endif
