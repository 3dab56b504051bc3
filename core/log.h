/* tunerguard's own diagnostics on stderr.  One line each, prefixed
 * "tunerguard: ".  Uses vsnprintf into a stack buffer and one write(2): no
 * allocation, no stdio buffering, never from a signal handler. */
#ifndef TG_LOG_H
#define TG_LOG_H

/* Always printed (problems the user must see). */
void tg__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed when verbosity >= level. */
void tg__info(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
