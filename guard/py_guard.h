/* Guarded methods: every call of a tuner's Python method bracketed with
 * enter/leave on the tuner table, by a trampoline in the function's own
 * vectorcall slot (the function stays on the class) or, on 3.11, a C method
 * descriptor put on the class in its place (guard/guard_install.c).
 *
 * All functions: an attached thread (the GIL held, where there is one);
 * installs take the install lock (guard/guard_internal.h). */
#ifndef TG_PY_GUARD_H
#define TG_PY_GUARD_H

#include "core/py_api.h"
#include <stdint.h>

/* Guard cls.<name> (found in cls's own __dict__).  declared: for a
 * targets= entry (a tuner the user declared).  Returns 1 if a guard was
 * installed, 0 if there was nothing to guard (absent, already guarded, not a
 * plain function), -1 on error (one warning printed). */
int tg_guard_install(PyObject *cls, const char *name, const char *why, int declared);

/* Mark the tuning steps tuning= names on cls, the class of targets= entries
 * module:qualname (a declared tuner), or a subclass of it (its overrides of
 * them): as tg_guard_install_markers does for the built-in tuners' tuning
 * methods.  One line for an entry that names no method of cls.  Takes the
 * install lock. */
void tg_guard_install_tuning_steps(PyObject *cls, const char *module, const char *qualname);

/* Mark the tuning methods of a built-in tuner class (Autotuner._bench,
 * prune_configs, check_disk_cache; CachingAutotuner.benchmark_all_configs,
 * ...): a call of one counts its thread as tuning, with no session of its
 * own, so severity needs no walk of that thread's frames.  Takes the install
 * lock. */
void tg_guard_install_markers(PyObject *cls);

/* Is `value` a guard object tunerguard made?  Without the install lock: the
 * published slots' orig_vc and descr, loaded whole. */
int tg_guard_is_ours(PyObject *value);
/* cls is a class (a type, or of a metaclass).  GIL held. */
int tg_guard_is_class(PyObject *cls);

/* How many guards were installed (0: no guarded call can have happened, so
 * tg_guard_stats has nothing to say).  Any thread: an acquire load of the
 * published count. */
int tg_guard_count(void);

/* Counts for the exit summary (the reports' own: reports/emit.h). */
struct tg_guard_stats {
    uint64_t waits;        /* serialized calls: ended waits, and calls still waiting */
    uint64_t wait_ns;      /* total time they waited, until now for those still waiting */
    int guards;            /* methods guarded */
    /* Waits begun and not ended (a thread still waiting at exit): how many,
     * the sum of their start times (CLOCK_MONOTONIC ns), and how many of
     * them are calls not counted in waits yet.  tg_guard_stats adds them to
     * waits and wait_ns; still_waiting says how many there were. */
    uint64_t waiting, waiting_t0_sum, waiting_calls;
    uint64_t still_waiting;
};
void tg_guard_stats(struct tg_guard_stats *out);
/* In a fork child: forget the parent's counts (the child reports its own). */
void tg_guard_atfork_child(void);
/* Kernels that were contended (serialize mode), into buf: the first few by
 * name, comma separated, then "and N more"; never a name cut short. */
void tg_guard_contended(char *buf, int len);

#endif
