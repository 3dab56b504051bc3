/* What a hand-off between two threads costs on this machine: the time from
 * one thread's futex wake to the woken thread running, after the woken one
 * slept for a while (an idle vCPU may be halted by then), and the cost of
 * the clock reads on serialize's paths.  A fact of the machine, for reading
 * serialize's figures (docs/benchmarks.md); not a test.
 *
 *   cc -O2 -pthread bench/wake_latency.c -o build/wake_latency
 *   build/wake_latency [ROUNDS]      # default 400: about 2 s per sleep length
 *
 * For each sleep length (the waiter parked that long before the wake: 50 us,
 * 1 ms, 5 ms = serialize's slice), ROUNDS wake-ups: median, 90th percentile
 * and max, in microseconds.  Also prints the clock source. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint32_t word;
static _Atomic uint64_t ran_at_ns;
static _Atomic int stop;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *waiter(void *arg)
{
    (void)arg;
    uint32_t seen = 0;
    while (!atomic_load(&stop)) {
        while (atomic_load(&word) == seen && !atomic_load(&stop))
            syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        seen = atomic_load(&word);
        atomic_store(&ran_at_ns, now_ns());
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    if (rounds < 10)
        rounds = 10;
    FILE *cs = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char src[64] = "?";
    if (cs) {
        if (fscanf(cs, "%63s", src) != 1)
            src[0] = '?', src[1] = '\0';
        fclose(cs);
    }
    struct timespec ts;
    uint64_t t0 = now_ns();
    for (int i = 0; i < 1000000; i++)
        clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t mono = now_ns() - t0;
    t0 = now_ns();
    for (int i = 0; i < 1000000; i++)
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    uint64_t coarse = now_ns() - t0;
    printf("clocksource %s; clock_gettime MONOTONIC %.1f ns, MONOTONIC_COARSE %.1f ns\n", src, mono / 1e6,
           coarse / 1e6);

    pthread_t th;
    pthread_create(&th, NULL, waiter, NULL);
    const long sleeps_us[] = {50, 1000, 5000};
    uint64_t *lat = malloc(sizeof *lat * (size_t)rounds);
    for (size_t s = 0; s < sizeof sleeps_us / sizeof sleeps_us[0]; s++) {
        for (int r = 0; r < rounds; r++) {
            struct timespec d = {0, sleeps_us[s] * 1000};
            nanosleep(&d, NULL); /* the waiter has been parked this long */
            atomic_store(&ran_at_ns, 0);
            uint64_t w = now_ns();
            atomic_fetch_add(&word, 1);
            syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
            uint64_t ran;
            while ((ran = atomic_load(&ran_at_ns)) == 0)
                ; /* this thread stays on its CPU: the wake's latency alone */
            lat[r] = ran - w;
        }
        qsort(lat, (size_t)rounds, sizeof *lat, cmp);
        printf("parked %5ld us: wake to run median %.1f us, p90 %.1f us, max %.1f us (%d wakes)\n", sleeps_us[s],
               lat[rounds / 2] / 1e3, lat[rounds * 9 / 10] / 1e3, lat[rounds - 1] / 1e3, rounds);
    }
    atomic_store(&stop, 1);
    atomic_fetch_add(&word, 1);
    syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    pthread_join(th, NULL);
    free(lat);
    return 0;
}
