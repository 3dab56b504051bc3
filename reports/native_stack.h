/* Native stacks: raw capture on hot paths, symbolization when a report is
 * written.
 *
 * libunwind is loaded on demand (dlopen "libunwind.so.8"), never linked; when
 * it is missing, glibc's backtrace() is used instead.  Nothing here is required
 * for tunerguard to work: a failed capture gives 0 frames. */
#ifndef TG_NATIVE_STACK_H
#define TG_NATIVE_STACK_H

#include <stddef.h>

/* Load the unwinder and warm it up (first unwind outside any signal handler).
 * Call once from a normal context before the hot paths may capture.  Safe to
 * call more than once.  Allocates (dlopen). */
void tg_native_init(void);

/* Capture up to max return addresses of the calling thread, innermost first,
 * skipping `skip` frames of the caller's own.  No allocation, no lock; with
 * libunwind two fstat(2)s (its pipe still its own), no other syscall once
 * tg_native_init() has run (before that it returns 0).
 * Async-signal-safe in the sense libunwind's unw_backtrace is.  Returns the
 * number of frames stored. */
int tg_native_capture(void **frames, int max, int skip);

/* Symbolize one address into buf: "function+0xoff (module+0xoff)", or
 * "?? (module+0xoff)" or "0x..." when nothing is known.  Slow (reads symbol
 * tables): report time only.  Not signal-safe.  Returns buf. */
char *tg_native_symbolize(void *addr, char *buf, size_t len);

#endif
