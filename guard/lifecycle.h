/* The process life cycle of tunerguard: one list of what a fork child
 * resets, and one shutdown path for a normal exit and for the halts
 * (halt_on_race, deadlock=abort). */
#ifndef TG_LIFECYCLE_H
#define TG_LIFECYCLE_H

/* The core's part of tg_activate, and of the destructor (nothing when never
 * activated).  Core only; reached through the core's table. */
void tg__core_activate(void);
void tg__core_fini(void);

/* Register the fork-child list (pthread_atfork) and take the clock's
 * reference sample (core/clock.h) once per process, whoever comes first: the
 * first guard installed, the CUDA hooks' first resolution, the first
 * benchmark.  Before any of them nothing per thread or per process is kept
 * that a child would have to reset (arming uses tg__self_busy), and no tick
 * is recorded.
 * Idempotent; any thread; one atomic load after the first call. */
void tg_lifecycle_arm_fork(void);

enum tg_shutdown_why {
    TG_SHUTDOWN_EXIT, /* the library's destructor (exit(), after finalisation) */
    TG_SHUTDOWN_HALT, /* after a report whose kind halts (reports/emit.h) */
};

/* The one way out: the trace closed (trace=1: its end event and ']'), the
 * exit line (once), then
 *   EXIT: the matched suppressions (verbosity>=1), and exitcode= when a
 *         report was written that counts (a race a serialize wait prevented
 *         does not, unless prevented_is_race=1; nor do the "repeats" records
 *         the exit line's flush writes): _exit(exitcode); else it
 *         returns and the process exits as it would have;
 *   HALT: _exit(exitcode), else _exit(66); never returns.
 * Not signal-safe (the fatal-signal path has its own, reports/fatal.c). */
void tg_shutdown(enum tg_shutdown_why why);

#endif
