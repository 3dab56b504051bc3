/* The contended paths of the tuner table's lock words (tuner_table.h,
 * "The entry lock"): Drepper's three-state mutex ("Futexes Are Tricky",
 * mutex 2) with a spin in front.  A holder keeps the word for a few stores,
 * so a short spin usually sees it free and makes no syscall. */
#include "detectors/tuner_table.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void tg_word_lock_slow(uint32_t *word)
{
    for (int i = 0; i < TG_TUNER_LOCK_SPINS; i++) {
        uint32_t cur = __atomic_load_n(word, __ATOMIC_RELAXED);
        if (cur == 0 && __atomic_compare_exchange_n(word, &cur, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
        if (cur == 2)
            break; /* others park already: join them */
        cpu_relax();
    }
    /* 2: held, and the holder's unlock must wake someone.  Whoever takes it
     * here takes it as 2 too (it cannot tell whether others still park). */
    int saved = errno;
    while (__atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE) != 0)
        syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    errno = saved;
}

void tg_word_wake(uint32_t *word)
{
    int saved = errno;
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}
