/* See park.h. */
#include "core/park.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int tg_park_wait(uint32_t *word, uint32_t seen, uint64_t timeout_ns)
{
    struct timespec rel = {(time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull)};
    int saved = errno;
    long rc = syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, &rel, NULL, 0);
    int err = rc == 0 ? 0 : errno;
    errno = saved;
    if (err == EINTR || err == ETIMEDOUT)
        return err;
    return 0; /* woken, EAGAIN (the word changed first) */
}

void tg_park_wake(uint32_t *word)
{
    __atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
    int saved = errno;
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}
