/* Between the fatal-signal handler (reports/fatal.c) and the report's
 * content (reports/fatal_report.c).  Every call below but the first is
 * async-signal-safe and not reentrant (one static capture). */
#ifndef TG_FATAL_INTERNAL_H
#define TG_FATAL_INTERNAL_H

/* Resolve the CPython functions the text block calls (dlsym: not
 * signal-safe; before the handler is installed).  -1 when require_python
 * and libpython is not in the process (Py_IsInitialized does not
 * resolve), else 0. */
int tg__fatal_resolve_python(int require_python);

/* Capture what the report shows of signal sig (siginfo: a siginfo_t, or
 * NULL): the receiving thread's native frames and their modules, pid, tid,
 * the time. */
void tg__fatal_capture(int sig, const void *siginfo);

/* Write the text block of the last capture to fd.  -1 when a write failed
 * (a full disk, a file-size limit): the block is cut. */
int tg__fatal_write_text(int fd);

/* Write the JSON Lines record ("kind":"fatal") of the last capture to fd;
 * rank: the process's (tg_proc_rank), -1 for none.  Takes the next report
 * number (tg_fatal_set_context).  -1 when the write failed. */
int tg__fatal_write_jsonl(int fd, long rank);

#endif
