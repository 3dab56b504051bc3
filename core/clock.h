/* Cheap timestamps for hot paths.  tg_ticks() is one rdtsc on x86-64 (no
 * syscall, ~7 ns); tg_ticks_to_ns() converts, calibrating against
 * CLOCK_MONOTONIC from the sample taken by tg_clock_init().  Elsewhere
 * tg_ticks() is CLOCK_MONOTONIC in ns. */
#ifndef TG_CLOCK_H
#define TG_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t tg_ticks(void) { return __rdtsc(); }
#else
static inline uint64_t tg_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

static inline uint64_t tg_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CLOCK_REALTIME ns of the moment CLOCK_MONOTONIC read mono_ns: the
 * wall-clock anchor written with a report's monotonic time, so a reader
 * can show a date and time.  Signal-safe (clock_gettime only). */
static inline uint64_t tg_wall_of_mono(uint64_t mono_ns)
{
    struct timespec rt, mo;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mo);
    int64_t off = ((int64_t)rt.tv_sec - (int64_t)mo.tv_sec) * 1000000000ll + (rt.tv_nsec - mo.tv_nsec);
    return (uint64_t)((int64_t)mono_ns + off);
}

/* Take the reference sample: before the first tick that will be converted
 * (guard/lifecycle.c: the first guard or CUDA resolution), not in the
 * constructor (clock_gettime maps libc code a small program lacks). */
void tg_clock_init(void);
/* CLOCK_MONOTONIC ns at which `ticks` was read. Not for hot paths. */
uint64_t tg_ticks_to_ns(uint64_t ticks);

#endif
