/* The fatal-signal handler (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL).
 *
 * On a fatal signal it writes, with write(2) only, one block to the text
 * report (the sink's open file, or a new <stem>.<id>.txt of core/process.h
 * when no report was written yet; stderr for log_path=stderr):
 * the signal, the faulting thread's native stack (raw addresses, each with
 * its module and offset read from /proc/self/maps), the tuner state (who is
 * inside which tuner instance, at what depth, since when, who waits), and the
 * Python stacks of all threads (CPython's _Py_DumpTracebackThreads, the
 * function faulthandler uses).  It then flushes the trace (trace=1) and
 * chains: the previous action is restored and the signal re-delivered (a
 * re-raise for sent signals such as abort(), a re-executed faulting
 * instruction for hardware faults), so faulthandler, other handlers and the
 * default action (core dump, exit status) still happen.  A second fatal
 * signal while the block is being written (another thread, or a fault in the
 * handler itself) skips straight to chaining.
 *
 * After the text block it writes one JSON Lines record, "kind":"fatal"
 * (docs/report-schema.md), to the JSON Lines report (opened the same way;
 * none with log_path=stderr): the same stack and tuner state, and the link to
 * the race report of the session the receiving thread was in, if any. */
#ifndef TG_FATAL_H
#define TG_FATAL_H

#include <stdint.h>

/* Install the handlers (once; later calls return 0 and do nothing).  Not
 * signal-safe: resolves the CPython functions with dlsym and saves the
 * previous actions.  require_python: install only when libpython is in the
 * process (Py_IsInitialized resolves); the preload passes 1, tests 0.
 * Computes the process facts (core/process.h) if not done yet.  Returns 1
 * installed, 0 already, -1 skipped. */
int tg_fatal_install(int require_python);

/* What the JSON Lines record says of the process: mode ("detect",
 * "serialize"; a string that lives forever) and the counter that numbers its
 * reports (the record takes the next seq from it; reports_before is its value
 * before).  NULLs: "mode":null, seq 1.  Call before tg_fatal_install. */
void tg_fatal_set_context(const char *mode, uint64_t *seq);

/* Write the block for signal sig to fd (no chaining): what the handler
 * does, callable from tests.  Async-signal-safe; not reentrant (one static
 * capture). */
void tg_fatal_write_block(int fd, int sig, const void *siginfo);

#endif
