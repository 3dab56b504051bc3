/* Parking a thread on a 32-bit word (futex(2), process-private): what the
 * serialize wait blocks on.  No allocation, no lock; one syscall each;
 * async-signal-safe.  The word is only ever changed with atomic operations. */
#ifndef TG_PARK_H
#define TG_PARK_H

#include <stdint.h>

/* Block while *word == seen, at most timeout_ns.  Returns 0 when woken or
 * when *word had already changed, EINTR when a signal arrived (its handler
 * ran), ETIMEDOUT.  Spurious returns are possible: callers re-check. */
int tg_park_wait(uint32_t *word, uint32_t seen, uint64_t timeout_ns);

/* Change *word and wake one thread parked on it. */
void tg_park_wake(uint32_t *word);

#endif
