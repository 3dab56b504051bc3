/* tunerguard's own diagnostics on stderr.  One line each, prefixed
 * "tunerguard: ".  Uses vsnprintf into a stack buffer and one write(2): no
 * allocation, no stdio buffering, never from a signal handler.
 *
 * A process started with fd 2 closed (`2>&-`) gives that number to the first
 * file it opens: then nothing of tunerguard's is ever written to fd 2 (these
 * lines are dropped, reports go to files only). */
#ifndef TG_LOG_H
#define TG_LOG_H

#include <stddef.h>

/* Always printed (problems the user must see). */
void tg__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed when verbosity >= level. */
void tg__info(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The one "say it once" path: a line from a call site that speaks at most
 * cap times in a process.  *said is the site's own count (a static
 * unsigned of the caller's, zero at start; one per row where one site
 * speaks for several things), counted whether or not the line prints.
 * level 0: always printed, as tg__warn; else when verbosity >= level, as
 * tg__info.  Returns 1 when this call was within the cap.  Any thread, GIL
 * or not, a CUDA hook included (one relaxed atomic load once the cap is
 * reached); not from a signal handler. */
int tg__say_capped(unsigned *said, unsigned cap, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Constructor only, first: look (fcntl F_GETFD) whether fd 2 is open. */
void tg_log_note_start(void);
/* May tunerguard write to fd 2 now?  0 when it was closed at start, is
 * closed now, or is no longer the file the process started with and not
 * one a stderr is (a terminal, /dev/null, a pipe, a file opened for
 * appending or an unlinked one: a capture): a data file, socket or device
 * the program opened on the free number.  Signal-safe (fstat, fcntl,
 * isatty). */
int tg_log_stderr_ok(void);
/* Write len bytes to fd 2 (its owner checked with tg_log_stderr_ok first)
 * without ever blocking long or raising SIGPIPE: each piece of at most
 * PIPE_BUF bytes goes once poll says fd 2 takes it, a second at most,
 * signals included (once a wait timed out, later writes do not wait until
 * one goes through whole: a pipe nobody reads); a
 * reader gone gives EPIPE with SIGPIPE held off this thread.  0 when all
 * was written, else -1.  errno kept.  Signal-safe. */
int tg_log_write_stderr(const char *p, size_t len);
/* log_path=stderr was moved to the default files (stderr closed at start);
 * the text report's first line says so. */
void tg_log_note_moved(void);
int tg_log_stderr_moved(void);

#endif
