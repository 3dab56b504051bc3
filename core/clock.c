/* TSC to CLOCK_MONOTONIC conversion.  See clock.h. */
#include "core/clock.h"

static uint64_t ref_ticks, ref_ns;

void tg_clock_init(void)
{
    ref_ns = tg_mono_ns();
    ref_ticks = tg_ticks();
}

uint64_t tg_ticks_to_ns(uint64_t ticks)
{
#if defined(__x86_64__)
    uint64_t now_ticks = tg_ticks(), now_ns = tg_mono_ns();
    if (now_ticks <= ref_ticks || now_ns <= ref_ns)
        return now_ns;
    double ns_per_tick = (double)(now_ns - ref_ns) / (double)(now_ticks - ref_ticks);
    if (ticks >= now_ticks)
        return now_ns;
    return now_ns - (uint64_t)((double)(now_ticks - ticks) * ns_per_tick);
#else
    return ticks;
#endif
}
