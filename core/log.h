/* tunerguard's own diagnostics on stderr.  One line each, prefixed
 * "tunerguard: ".  Uses vsnprintf into a stack buffer and one write(2): no
 * allocation, no stdio buffering, never from a signal handler.
 *
 * A process started with fd 2 closed (`2>&-`) gives that number to the first
 * file it opens: then nothing of tunerguard's is ever written to fd 2 (these
 * lines are dropped, reports go to files only). */
#ifndef TG_LOG_H
#define TG_LOG_H

/* Always printed (problems the user must see). */
void tg__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed when verbosity >= level. */
void tg__info(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Constructor only, first: look (fcntl F_GETFD) whether fd 2 is open. */
void tg_log_note_start(void);
/* 0 when fd 2 was closed at start: never write to it.  Signal-safe. */
int tg_log_stderr_ok(void);
/* log_path=stderr was moved to the default files (stderr closed at start);
 * the text report's first line says so. */
void tg_log_note_moved(void);
int tg_log_stderr_moved(void);

#endif
