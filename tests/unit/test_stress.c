/* stress=1 and isolate_tuning=1 (cuda/cuda_stress.c) against the stand-in
 * driver.  Ordering by barriers and by observed state (a thread counted as
 * holding / waiting, the fake's call counts), never by sleeping. */
#include "fakecuda_env.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "detectors/interference.h"
#include "reports/report.h"
#include "core/process.h"
#include "core/py_api.h"

static pthread_barrier_t bar;
static char prefix[64];

static void setup(void)
{
    fk_open();
    pthread_barrier_init(&bar, NULL, 2);
    static char dir[] = "/tmp/tg-stress-XXXXXX";
    cr_assert(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix); /* reports (if any) never land in the cwd */
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

/* ---- the GIL, faked: tg_py is the process's table of CPython functions
 * (core/py_api.h), all NULL in this Python-less binary; a test sets the few
 * the code under test calls.  "Held" is per thread. ----------------------- */

static __thread int fake_gil;
static int fake_gil_check(void) { return fake_gil; }
static _Atomic int fake_saves; /* PyEval_SaveThread calls: a wait with the GIL released */
static PyThreadState *fake_save_thread(void)
{
    atomic_fetch_add(&fake_saves, 1);
    return (PyThreadState *)&fake_saves;
}
static void fake_restore_thread(PyThreadState *ts) { (void)ts; }

/* A launch with the GIL held never waits under isolate_tuning: the
 * benchmarking thread needs the GIL to end its session. */
static _Atomic int foreign_done;
static void *foreign_launch_with_gil(void *p)
{
    (void)p;
    fake_gil = 1;
    fk_use_device(0);
    fk_launch(foreign_k);
    atomic_store(&foreign_done, 1);
    return NULL;
}
static int foreign_done_or_waiting(void) { return atomic_load(&foreign_done) || st().isolate_waiting > 0; }

Test(stress, isolate_tuning_never_waits_with_the_gil_held)
{
    tg_opts.isolate_tuning = 1;
    tg_py.PyGILState_Check = fake_gil_check;
    foreign_k = fk_kernel("foreign");
    pthread_t tb, tf;
    pthread_create(&tb, NULL, bench_hold, NULL);
    pthread_barrier_wait(&bar); /* 1: benchmarking on device 0 */
    pthread_create(&tf, NULL, foreign_launch_with_gil, NULL);
    cr_assert(fk_until(foreign_done_or_waiting));
    cr_assert(atomic_load(&foreign_done), "a launch with the GIL held waits for the benchmark");
    pthread_join(tf, NULL);
    pthread_barrier_wait(&bar); /* 2 */
    pthread_join(tb, NULL);
    struct tg_stress_stats s = st();
    cr_assert_eq(fk_count("cuLaunchKernel"), 1);
    cr_assert_eq(s.isolate_waits, 0);
    cr_assert_eq(s.interference_reports, 1, "it ran during the benchmark: interference");
}

/* ---- the interference report: one filled at a time ------------------------
 * Thread A's report is held inside its first driver call (the fake's gate on
 * cuFuncGetName: naming the tuned kernel); thread B then ends its own
 * session with interference.  B must wait for A's report to be out (before
 * the fix it filled the same static report over A's, and A's came out with
 * B's device and counts).  B's waiting is seen positively: with the GIL
 * (faked) it releases it to wait (PyEval_SaveThread); without, the kernel
 * shows it blocked in a futex wait. */

struct reporter {
    int dev;
    const char *kernel;
    int gil;
    pthread_barrier_t *go; /* NULL: end the session right after the launches */
    _Atomic pid_t tid;
    _Atomic int done;
};
static pthread_barrier_t bar3;

static void *reporter_thread(void *p)
{
    struct reporter *r = p;
    fake_gil = r->gil;
    atomic_store(&r->tid, fk_gettid());
    CUfunction k = fk_kernel(r->kernel);
    fk_use_device(r->dev);
    fk_session_enter();
    w_sync();                    /* benchmarking on r->dev */
    fk_launch(k);                /* its kernel: the report names it */
    pthread_barrier_wait(&bar3); /* 1: both benchmarking */
    pthread_barrier_wait(&bar3); /* 2: the foreign launches are in */
    if (r->go)
        pthread_barrier_wait(r->go);
    uint64_t seq = 0;
    fk_session_leave(&seq);
    atomic_store(&r->done, 1);
    return NULL;
}

static struct reporter *waiting_b;
static int b_done_or_gil_released(void)
{
    return atomic_load(&waiting_b->done) || atomic_load(&fake_saves) > 0;
}
static int b_done_or_futex_wait(void)
{
    if (atomic_load(&waiting_b->done))
        return 1;
    char path[64], line[256] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)atomic_load(&waiting_b->tid));
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    long nr = -1;
    unsigned long uaddr = 0, op = 0;
    if (!ok || sscanf(line, "%ld %lx %lx", &nr, &uaddr, &op) != 3 || nr != SYS_futex)
        return 0;
    op &= FUTEX_CMD_MASK; /* a wait, not the wake of a session end */
    return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET;
}

static void two_reports_one_at_a_time(int gil)
{
    if (gil) {
        tg_py.PyGILState_Check = fake_gil_check;
        tg_py.PyEval_SaveThread = fake_save_thread;
        tg_py.PyEval_RestoreThread = fake_restore_thread;
    }
    int (*arm_on)(const char *) = (int (*)(const char *))fk_real("fakecuda_gate_arm_on");
    int (*wait_parked)(double) = (int (*)(double))fk_real("fakecuda_gate_wait_parked");
    int (*parked_tid)(void) = (int (*)(void))fk_real("fakecuda_gate_parked_tid");
    void (*gate_open)(void) = (void (*)(void))fk_real("fakecuda_gate_open");
    pthread_barrier_t go_b;
    pthread_barrier_init(&go_b, NULL, 2);
    pthread_barrier_init(&bar3, NULL, 3);
    static struct reporter a, b;
    a = (struct reporter){.dev = 0, .kernel = "kern_a", .gil = gil};
    b = (struct reporter){.dev = 1, .kernel = "kern_b", .gil = gil, .go = &go_b};
    waiting_b = &b;
    CUfunction fa = fk_kernel("fa"), fb = fk_kernel("fb");
    cr_assert_eq(arm_on("cuFuncGetName"), 0);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, reporter_thread, &a);
    pthread_create(&tb, NULL, reporter_thread, &b);
    pthread_barrier_wait(&bar3); /* 1 */
    fk_use_device(0);
    for (int i = 0; i < 3; i++)
        fk_launch(fa);
    fk_use_device(1);
    for (int i = 0; i < 2; i++)
        fk_launch(fb);
    pthread_barrier_wait(&bar3); /* 2: A ends its session */
    cr_assert_eq(wait_parked(20.0), 1, "A's report never named its kernel");
    cr_assert_eq(parked_tid(), (int)atomic_load(&a.tid));
    pthread_barrier_wait(&go_b); /* B ends its session */
    cr_assert(fk_until(gil ? b_done_or_gil_released : b_done_or_futex_wait));
    gate_open();
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    cr_assert_eq(st().interference_reports, 2);

    char path[128];
    snprintf(path, sizeof path, "%s.%d.txt", prefix, (int)getpid());
    FILE *f = fopen(path, "r");
    cr_assert(f, "no %s", path);
    static char text[1 << 16];
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    char want[256];
    snprintf(want, sizeof want,
             "timings on device 0 were taken under load: 3 foreign kernels from threads %d (kernels 'fa')",
             (int)fk_gettid());
    cr_assert(strstr(text, want), "A's report is not A's: want <%s> in:\n%s", want, text);
    snprintf(want, sizeof want,
             "timings on device 1 were taken under load: 2 foreign kernels from threads %d (kernels 'fb')",
             (int)fk_gettid());
    cr_assert(strstr(text, want), "B's report is not B's: want <%s> in:\n%s", want, text);
    cr_assert(strstr(text, "(CUDA 'kern_a')") && strstr(text, "(CUDA 'kern_b')"), "%s", text);
}

Test(stress, interference_reports_are_filled_one_at_a_time_with_the_gil)
{
    two_reports_one_at_a_time(1);
    cr_assert_eq(atomic_load(&fake_saves), 1, "B waited with the GIL released, once");
}

Test(stress, interference_reports_are_filled_one_at_a_time_without_the_gil)
{
    two_reports_one_at_a_time(0);
}
