/* Tuning-interference detector (detectors/interference.c, cuda/cuda_stress.c)
 * against the stand-in driver: a thread "benchmarks" on a fake device (inside
 * a tuner session, it synchronized), other threads launch kernels on the same
 * or another fake device; the session end counts and reports what ran.
 * Ordering is forced with barriers; no sleeps. */
#include "fakecuda_env.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "detectors/interference.h"
#include "reports/report.h"
#include "core/process.h"
#include "report_fixture.h"

static pthread_barrier_t bar;

struct bench_arg {
    int dev;           /* device the benchmark runs on */
    int own;           /* own launches after registering */
    CUfunction k;
    int report;        /* end through tg_tuning_session_end (report) instead of tg_itf_end */
    uint64_t seq;
    struct tg_itf_result res;
    int registered;
    pid_t tid;
};

/* Benchmark: enter a session, synchronize (now benchmarking), wait at the
 * barrier while the others launch, launch own kernels, end the session. */
static void *bench_thread(void *p)
{
    struct bench_arg *a = p;
    a->tid = fk_gettid();
    fk_use_device(a->dev);
    fk_session_enter();
    cr_assert_eq(w_sync(), CUDA_SUCCESS);
    a->registered = tg_itf_self.dev1 == a->dev + 1;
    pthread_barrier_wait(&bar); /* 1: benchmarking */
    pthread_barrier_wait(&bar); /* 2: the others launched */
    for (int i = 0; i < a->own; i++)
        fk_launch(a->k);
    if (a->report) {
        fk_session_leave(&a->seq);
    } else {
        tg__self()->nheld = 0;
        tg_itf_end(a->tid, &a->res);
    }
    return NULL;
}

static void setup(void)
{
    fk_open();
    pthread_barrier_init(&bar, NULL, 2);
}

TestSuite(interference, .init = setup);

Test(interference, foreign_launches_on_the_same_device_are_counted_with_their_thread_and_kernel)
{
    struct bench_arg a = {.dev = 1, .own = 2, .k = fk_kernel("tuned_kernel")};
    CUfunction other = fk_kernel("other_kernel");
    pthread_t th;
    fk_use_device(1);
    fk_launch(other); /* before the benchmark: not counted */
    pthread_create(&th, NULL, bench_thread, &a);
    pthread_barrier_wait(&bar);
    cr_assert(a.registered, "a synchronize inside a session starts a benchmark");
    cr_assert(tg_itf_maybe_busy(1));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(fk_launch(other), CUDA_SUCCESS);
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    cr_assert_eq(a.res.dev, 1);
    cr_assert_eq(a.res.foreign, 3, "foreign = %llu", (unsigned long long)a.res.foreign);
    cr_assert_eq(a.res.own, 2);
    cr_assert_eq(a.res.func, (uint64_t)(uintptr_t)a.k, "the kernel under benchmark is its own last launch");
    cr_assert_eq(a.res.nsamples, 1);
    cr_assert_eq(a.res.samples[0].tid, fk_gettid());
    cr_assert_eq(a.res.samples[0].func, (uint64_t)(uintptr_t)other);
    cr_assert(a.res.last_out);
    cr_assert_not(tg_itf_maybe_busy(1), "the device is idle after the session");
    cr_assert_eq(fk_count("cuLaunchKernel"), 6, "every launch reached the driver");
}

Test(interference, launches_on_another_device_do_not_count)
{
    struct bench_arg a = {.dev = 1, .own = 1, .k = fk_kernel("tuned_kernel")};
    CUfunction other = fk_kernel("other_kernel");
    pthread_t th;
    pthread_create(&th, NULL, bench_thread, &a);
    pthread_barrier_wait(&bar);
    fk_use_device(2);
    for (int i = 0; i < 5; i++)
        fk_launch(other);
    fk_use_device(0);
    fk_launch(other);
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    cr_assert_eq(a.res.dev, 1);
    cr_assert_eq(a.res.foreign, 0);
    cr_assert_eq(a.res.nsamples, 0);
    cr_assert_eq(a.res.own, 1);
}

Test(interference, outside_a_session_or_before_benchmarking_nothing_registers)
{
    fk_use_device(0);
    CUfunction k = fk_kernel("k");
    cr_assert_eq(w_sync(), CUDA_SUCCESS); /* no session */
    cr_assert_eq(tg_itf_self.dev1, 0);
    fk_session_enter();
    fk_launch(k); /* one launch: the tuned fast path, not a benchmark */
    cr_assert_eq(tg_itf_self.dev1, 0);
    cr_assert_not(tg_itf_maybe_busy(0));
    fk_launch(k); /* a second launch: benchmarking */
    cr_assert_eq(tg_itf_self.dev1, 1);
    cr_assert(tg_itf_maybe_busy(0));
    uint64_t seq = 0;
    fk_session_leave(&seq);
    cr_assert_eq(seq, 0, "no foreign launch, no report");
    cr_assert_not(tg_itf_maybe_busy(0));
}

/* Two threads benchmarking on one device both see each other's launches. */
static struct bench_arg pair[2];
static pthread_barrier_t bar3;
static void *pair_thread(void *p)
{
    struct bench_arg *a = p;
    a->tid = fk_gettid();
    fk_use_device(3);
    fk_session_enter();
    w_sync();
    pthread_barrier_wait(&bar3); /* both benchmarking */
    for (int i = 0; i < a->own; i++)
        fk_launch(a->k);
    pthread_barrier_wait(&bar3); /* both launched */
    tg__self()->nheld = 0;
    tg_itf_end(a->tid, &a->res);
    return NULL;
}

Test(interference, two_benchmarks_on_one_device_see_each_other)
{
    pthread_barrier_init(&bar3, NULL, 2);
    pair[0] = (struct bench_arg){.own = 4, .k = fk_kernel("a_kernel")};
    pair[1] = (struct bench_arg){.own = 7, .k = fk_kernel("b_kernel")};
    pthread_t t0, t1;
    pthread_create(&t0, NULL, pair_thread, &pair[0]);
    pthread_create(&t1, NULL, pair_thread, &pair[1]);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    cr_assert_eq(pair[0].res.foreign, 7);
    cr_assert_eq(pair[1].res.foreign, 4);
    cr_assert_eq(pair[0].res.nsamples, 1);
    cr_assert_eq(pair[0].res.samples[0].tid, pair[1].tid);
    cr_assert_eq(pair[1].res.samples[0].func, (uint64_t)(uintptr_t)pair[0].k);
    cr_assert_not(tg_itf_maybe_busy(3));
}

Test(interference, session_end_writes_an_interference_report_text_and_jsonl)
{
    char dir[] = "/tmp/tg-itf-XXXXXX";
    cr_assert(mkdtemp(dir));
    char prefix[128], txt[192], jsonl[192], cmd[1024];
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
    struct bench_arg a = {.dev = 2, .own = 1, .k = fk_kernel("tuned_kernel"), .report = 1};
    CUfunction other = fk_kernel("torch_gemm");
    pthread_t th;
    pthread_create(&th, NULL, bench_thread, &a);
    pthread_barrier_wait(&bar);
    fk_use_device(2);
    for (int i = 0; i < 5; i++)
        fk_launch(other);
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    cr_assert_eq(a.seq, 1, "one report, the first seq of the process");
    struct tg_stress_stats st;
    tg_stress_stats(&st);
    cr_assert_eq(st.interference_reports, 1);
    snprintf(txt, sizeof txt, "%s.%d.txt", prefix, (int)getpid());
    snprintf(jsonl, sizeof jsonl, "%s.%d.jsonl", prefix, (int)getpid());
    const char *text = fx_slurp(txt);
    char want[256];
    snprintf(want, sizeof want, "timings on device 2 were taken under load: 5 foreign kernels from threads %d (kernels 'torch_gemm')",
             (int)fk_gettid());
    cr_assert(strstr(text, "WARNING: tunerguard: tuning under load"), "%s", text);
    cr_assert(strstr(text, want), "want <%s> in:\n%s", want, text);
    cr_assert(strstr(text, "(CUDA 'tuned_kernel')"), "%s", text);
    cr_assert(!strstr(text, "config that won") && !strstr(text, "?"),
              "no winner known: not named, no '?' (Inductor's CachingAutotuner keeps none where it is read)\n%s", text);
    snprintf(cmd, sizeof cmd,
             "python3 %s/check_jsonl.py %s --count 1 --expect '1:interference.foreign_launches=5' "
             "--expect '1:interference.device=2' --expect '1:interference.from.0.kernel=\"torch_gemm\"' "
             "--expect '1:interference.cuda_kernel=\"tuned_kernel\"' --expect '1:kind=\"interference\"'",
             dirname(strdup(__FILE__)), jsonl);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}
