/* The slow paths the CUDA hooks branch to, and what ends a benchmark:
 *   - tuning interference (detectors/interference.h): count foreign launches
 *     on a device under benchmark, report at session end;
 *   - isolate_tuning=1: a launch on a device under benchmark by a thread that
 *     is not itself in a tuner session waits until the benchmark ends;
 *   - stress=1: a blocking CUDA call inside a tuner session is held for
 *     stress_ms before the real call, so a thread that would enter the same
 *     tuner does so; a race seen on any tuner ends every hold early.
 * Everything here runs on the calling thread, without the GIL, except
 * tg_tuning_session_end (GIL held). */
#ifndef TG_CUDA_STRESS_H
#define TG_CUDA_STRESS_H

#include <stdint.h>

#include "detectors/interference.h"
#include "core/thread_state.h"

/* Seconds a launch waits under isolate_tuning before it goes ahead (one
 * warning, then no more waiting until the device is idle again). */
#define TG_ISOLATE_TIMEOUT_S 60

/* Launch on dev while tg_itf_maybe_busy(dev): count it, and under
 * isolate_tuning wait for the benchmark to end (futex on the device's
 * benchmark count; bounded). */
void tg__cuda_launch_busy(struct tg_thread *t, int dev, uint64_t func);
/* Inside a tuner session the thread has become a benchmark on dev. */
void tg__cuda_bench_begin(struct tg_thread *t, int dev);
/* stress=1: a blocking call `fn` inside a tuner session: hold it. */
void tg__cuda_stress_hold(struct tg_thread *t, unsigned fn);

/* A race or wait was detected on some tuner: end every stress hold now.
 * Any thread, GIL held or not; one atomic add and a futex wake. */
void tg_stress_wake(void);

/* The outermost tuner session of t ended: end its benchmark window (waking
 * isolate_tuning waiters) and, when other threads launched kernels on its
 * device meanwhile, emit a TG_REPORT_INTERFERENCE report about tuner `inst`
 * (a PyObject *, may be NULL: no Python facts) through reports/emit.h.
 * Returns its seq, 0 when none was written.  GIL held when inst is non-NULL.
 * Cheap when t was not benchmarking (one TLS read). */
uint64_t tg_tuning_session_end(struct tg_thread *t, void *inst);

/* fork child (guard/lifecycle.c): no benchmark, hold or isolate wait is
 * under way in the child. */
void tg__stress_atfork_child(void);

/* Test/diagnostic counters (relaxed). */
struct tg_stress_stats {
    uint64_t holds;          /* stress holds started */
    uint64_t holds_woken;    /* ... ended early by tg_stress_wake */
    uint64_t isolate_waits;  /* launches that waited under isolate_tuning */
    uint64_t isolate_timeouts;
    uint64_t interference_reports;
    int32_t holding;         /* threads in a stress hold now */
    int32_t isolate_waiting; /* launches waiting now */
};
void tg_stress_stats(struct tg_stress_stats *out);

#endif
