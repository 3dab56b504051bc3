/* stress=1 and isolate_tuning=1 (shim/cuda_stress.c) against the stand-in
 * driver.  Ordering by barriers and by observed state (a thread counted as
 * holding / waiting, the fake's call counts), never by sleeping. */
#include "fakecuda_env.h"

#include <stdlib.h>

#include "detectors/interference.h"
#include "reports/report.h"

static pthread_barrier_t bar;

static void setup(void)
{
    fk_open();
    pthread_barrier_init(&bar, NULL, 2);
    static char dir[] = "/tmp/tg-stress-XXXXXX";
    static char prefix[64];
    cr_assert(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_sink_configure(prefix); /* reports (if any) never land in the cwd */
}

TestSuite(stress, .init = setup);

static struct tg_stress_stats st(void)
{
    struct tg_stress_stats s;
    tg_stress_stats(&s);
    return s;
}
static int one_holding(void) { return st().holding == 1; }
static int one_isolate_waiting(void) { return st().isolate_waiting == 1; }

/* ---- stress ----------------------------------------------------------------- */

static void *sync_in_session(void *p)
{
    (void)p;
    fk_session_enter();
    cr_assert_eq(w_sync(), CUDA_SUCCESS);
    fk_session_leave(NULL);
    return NULL;
}

Test(stress, a_blocking_call_in_a_session_is_held_before_the_driver_until_a_race_wakes_it)
{
    tg_opts.stress = 1;
    tg_opts.stress_ms = 10000; /* long: only the wake can end it within the test */
    pthread_t th;
    pthread_create(&th, NULL, sync_in_session, NULL);
    cr_assert(fk_until(one_holding), "the synchronize was not held");
    cr_assert_eq(fk_count("cuCtxSynchronize"), 0, "held BEFORE the real call");
    tg_stress_wake(); /* what py_guard does when a second thread enters the tuner */
    pthread_join(th, NULL);
    cr_assert_eq(fk_count("cuCtxSynchronize"), 1);
    struct tg_stress_stats s = st();
    cr_assert_eq(s.holds, 1);
    cr_assert_eq(s.holds_woken, 1);
    cr_assert_eq(s.holding, 0);
}

Test(stress, a_hold_ends_by_itself_after_stress_ms)
{
    tg_opts.stress = 1;
    tg_opts.stress_ms = 1;
    sync_in_session(NULL);
    struct tg_stress_stats s = st();
    cr_assert_eq(s.holds, 1);
    cr_assert_eq(s.holds_woken, 0);
    cr_assert_eq(fk_count("cuCtxSynchronize"), 1);
}

Test(stress, no_hold_outside_a_session_for_polls_or_with_stress_off)
{
    tg_opts.stress = 1;
    tg_opts.stress_ms = 10000;
    cr_assert_eq(w_sync(), CUDA_SUCCESS); /* not in a session */
    fk_session_enter();
    cr_assert_eq(w_query(NULL), CUDA_SUCCESS); /* a poll: never held */
    fk_launch(fk_kernel("k"));                 /* a launch: never held */
    tg_opts.stress = 0;
    cr_assert_eq(w_sync(), CUDA_SUCCESS); /* stress off */
    fk_session_leave(NULL);
    cr_assert_eq(st().holds, 0);
}

/* ---- isolate_tuning --------------------------------------------------------- */

static void *bench_on_0(void *p)
{
    CUfunction k = p;
    fk_use_device(0);
    fk_session_enter();
    w_sync();                   /* benchmarking on device 0 */
    pthread_barrier_wait(&bar); /* 1 */
    fk_launch(k);               /* its own launch never waits */
    pthread_barrier_wait(&bar); /* 2: the foreign launch is waiting */
    fk_session_leave(NULL);     /* wakes it */
    return NULL;
}

static CUfunction foreign_k;
static void *foreign_launch_on_0(void *p)
{
    (void)p;
    fk_use_device(0);
    fk_launch(foreign_k);
    return NULL;
}

Test(stress, isolate_tuning_a_foreign_launch_waits_until_the_benchmark_ends)
{
    tg_opts.isolate_tuning = 1;
    CUfunction k = fk_kernel("tuned");
    foreign_k = fk_kernel("foreign");
    pthread_t tb, tf;
    pthread_create(&tb, NULL, bench_on_0, k);
    pthread_barrier_wait(&bar); /* 1: benchmarking */
    pthread_create(&tf, NULL, foreign_launch_on_0, NULL);
    cr_assert(fk_until(one_isolate_waiting), "the foreign launch did not wait");
    /* the bench thread launches its own kernel (no wait), then we meet */
    pthread_barrier_wait(&bar); /* 2 */
    pthread_join(tb, NULL);
    pthread_join(tf, NULL);
    cr_assert_eq(fk_count("cuLaunchKernel"), 2);
    struct tg_stress_stats s = st();
    cr_assert_eq(s.isolate_waits, 1);
    cr_assert_eq(s.isolate_timeouts, 0);
    cr_assert_eq(s.isolate_waiting, 0);
    cr_assert_eq(s.interference_reports, 0, "the waited launch ran after the benchmark: no interference");
}

static void *bench_hold(void *p)
{
    (void)p;
    fk_use_device(0);
    fk_session_enter();
    w_sync();
    pthread_barrier_wait(&bar); /* 1: benchmarking */
    pthread_barrier_wait(&bar); /* 2: the others launched */
    fk_session_leave(NULL);
    return NULL;
}

Test(stress, isolate_tuning_never_waits_on_another_device_nor_inside_a_session)
{
    tg_opts.isolate_tuning = 1;
    CUfunction k = fk_kernel("other");
    pthread_t tb;
    pthread_create(&tb, NULL, bench_hold, NULL);
    pthread_barrier_wait(&bar);
    fk_use_device(1);
    cr_assert_eq(fk_launch(k), CUDA_SUCCESS); /* device 1: no benchmark there */
    fk_use_device(0);
    fk_session_enter(); /* inside a tuner session (not benchmarking): must not wait */
    cr_assert_eq(fk_launch(k), CUDA_SUCCESS);
    tg__self()->nheld = 0;
    tg__self()->depth = 0;
    pthread_barrier_wait(&bar);
    pthread_join(tb, NULL);
    cr_assert_eq(fk_count("cuLaunchKernel"), 2);
    cr_assert_eq(st().isolate_waits, 0);
}
