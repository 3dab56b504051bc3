/* The Chrome trace file (reports/trace.c): every file parsed by
 * tests/unit/check_trace.py (well-formed JSON, B/E nesting per tid, flows
 * paired, metadata), plus caps, ring overwrite, concurrent drain, a
 * truncated file and the no-event case.  Each Criterion test runs in its own
 * process, so the module's static state starts fresh. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reports/report.h"
#include "core/process.h"
#include "reports/trace.h"
#include "core/clock.h"
#include "cuda/cuda_hooks.h"

extern char **environ;

static char dir[64], prefix[128], file[256];

static void setup_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/tg_trace_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    snprintf(file, sizeof file, "%s.%ld.trace.json", prefix, (long)getpid());
    unsetenv("RANK");
}

static const char *srcdir(void)
{
    static char d[1024];
    snprintf(d, sizeof d, "%s", __FILE__);
    char *slash = strrchr(d, '/');
    if (slash)
        *slash = '\0';
    return d;
}

/* Run the checker on `path`; extra args NULL-terminated.  Exit status, -1
 * when python3 did not run. */
static int check(const char *path, const char *const *extra)
{
    char script[1100];
    snprintf(script, sizeof script, "%s/check_trace.py", srcdir());
    const char *argv[64] = {"python3", script, path};
    int n = 3;
    for (int i = 0; extra && extra[i] && n < 62; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid;
    if (posix_spawnp(&pid, "python3", NULL, NULL, (char *const *)argv, environ) != 0)
        return -1;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

static void namer(unsigned long ident, char *buf, int len)
{
    snprintf(buf, (size_t)len, "Worker-%lu", ident);
}

static struct tg_thread mk_thread(pid_t tid)
{
    struct tg_thread t;
    memset(&t, 0, sizeof t);
    t.tid = tid;
    t.ident = (unsigned long)tid;
    return t;
}

static void push(const struct tg_thread *t, const char *fn, int kind, uint64_t t0, uint64_t t1,
                 uint64_t stream, uint64_t func)
{
    struct tg_cuda_call c;
    memset(&c, 0, sizeof c);
    int idx = tg_cuda_fn_index(fn);
    cr_assert_geq(idx, 0, "no CUDA hook row %s", fn);
    c.fn = (uint16_t)idx;
    c.kind = (uint8_t)kind;
    c.device = 0;
    c.stream = stream;
    c.func = func;
    tg_trace_cuda(t, &c, t0, t1);
}

struct other_args {
    struct tg_thread *t;
    int n;
};

static void *other_thread(void *p)
{
    struct other_args *a = p;
    uint64_t now = tg_mono_ns();
    for (int i = 0; i < a->n; i++)
        push(a->t, "cuCtxSynchronize", TG_CUDA_SYNC, now + (uint64_t)i * 2000, now + (uint64_t)i * 2000 + 500,
             0, 0);
    return NULL;
}

Test(trace, sessions_race_wait_cuda_parse_and_nest)
{
    setup_dir();
    tg_clock_init();
    tg_proc_configure(prefix);
    tg_trace_configure(1, 1000);
    tg_trace_set_cuda_names(tg_cuda_fn_name, tg_cuda_kernel_name); /* as the constructor does */
    tg_trace_set_namer(namer);
    struct tg_thread t1 = mk_thread(1001), t2 = mk_thread(1002);

    tg_trace_session_begin(&t1, "Autotuner.run", "matmul_kernel", 0x7f00);
    uint64_t now = tg_mono_ns();
    push(&t1, "cuLaunchKernel", TG_CUDA_LAUNCH, now, now, 0x10, 0);
    push(&t1, "cuCtxSynchronize", TG_CUDA_SYNC, now + 1000, now + 5000, 0, 0);

    /* a second thread's CUDA events go into its own ring */
    struct other_args oa = {&t2, 3};
    pthread_t th;
    pthread_create(&th, NULL, other_thread, &oa);
    pthread_join(th, NULL);

    static struct tg_report r;
    memset(&r, 0, sizeof r);
    r.kind = TG_REPORT_RACE;
    r.seq = 1;
    r.high_severity = 1;
    r.mode = "serialize";
    r.instance = 0x7f00;
    r.ts_ns = tg_mono_ns();
    snprintf(r.kernel, sizeof r.kernel, "matmul_kernel");
    snprintf(r.method, sizeof r.method, "Autotuner.run");
    r.entering.tid = 1002;
    snprintf(r.entering.name, sizeof r.entering.name, "Thread-2 \"q\"");
    r.inside.tid = 1001;
    snprintf(r.inside.name, sizeof r.inside.name, "ignored: 1001 is named already");
    tg_trace_race(&r);
    tg_trace_wait_begin(&t2, 1001, 0x7f00);
    tg_trace_session_end(&t1);
    tg_trace_wait_end(&t2);
    tg_trace_session_begin(&t2, "Autotuner.run", "matmul_kernel", 0x7f00);
    tg_trace_session_end(&t2);
    tg_trace_close();
    tg_trace_close(); /* second close: no-op */

    const char *ex[] = {
        "--expect", "count.B=3", "--expect", "count.E=3", "--expect", "count.X=4",
        "--expect", "count.i=3", "--expect", "flows=1",
        "--expect", "name.Autotuner.run matmul_kernel=2", "--expect", "name.race=3",
        "--expect", "name.serialize wait=1", "--expect", "name.cuLaunchKernel=1",
        "--expect", "thread.1001=Worker-1001", "--expect", "thread.1002=Thread-2 \"q\"",
        "--expect", "end.cuda_events_written=5", "--expect", "end.cuda_events_dropped=0",
        "--expect", "end.sessions_written=2", "--expect", "recovered=0", NULL};
    cr_assert_eq(check(file, ex), 0, "check_trace.py failed on %s (see above)", file);
    struct tg_trace_stats st;
    tg_trace_get_stats(&st);
    struct stat sb;
    cr_assert_eq(stat(file, &sb), 0);
    cr_assert_eq((uint64_t)sb.st_size, st.bytes);
    cr_log_info("trace: %llu events, %llu bytes, %.0f bytes/event", (unsigned long long)st.events,
                (unsigned long long)st.bytes, (double)st.bytes / (double)st.events);
}

Test(trace, no_event_no_file)
{
    setup_dir();
    tg_proc_configure(prefix);
    tg_trace_configure(1, 1000);
    tg_trace_set_cuda_names(tg_cuda_fn_name, tg_cuda_kernel_name); /* as the constructor does */
    tg_trace_close();
    cr_assert_neq(access(file, F_OK), 0, "a trace file was created without events");
    cr_assert_str_eq(tg_trace_path(), "");
}

Test(trace, off_writes_nothing)
{
    setup_dir();
    tg_proc_configure(prefix);
    tg_trace_configure(0, 1000);
    struct tg_thread t1 = mk_thread(1001);
    tg_trace_session_begin(&t1, "Autotuner.run", "k", 1);
    tg_trace_session_end(&t1);
    tg_trace_close();
    cr_assert_neq(access(file, F_OK), 0);
}

/* The cap bounds CUDA events + session begins; every drop is counted and the
 * end event says so; sessions past the cap lose their E too (still nested). */
Test(trace, cap_counts_drops)
{
    setup_dir();
    tg_clock_init();
    tg_proc_configure(prefix);
    tg_trace_configure(1, 10);
    tg_trace_set_cuda_names(tg_cuda_fn_name, tg_cuda_kernel_name); /* as the constructor does */
    struct tg_thread t1 = mk_thread(1001);
    uint64_t now = tg_mono_ns();
    for (int s = 0; s < 4; s++) {
        tg_trace_session_begin(&t1, "Autotuner.run", "k", 1);
        for (int i = 0; i < 5; i++)
            push(&t1, "cuCtxSynchronize", TG_CUDA_SYNC, now + 1, now + 2, 0, 0);
        tg_trace_session_end(&t1);
        now = tg_mono_ns();
    }
    tg_trace_close();
    /* session 1: B + 5 = 6; session 2: B + 3 CUDA = 10, then 2 dropped;
     * sessions 3, 4: dropped with their 10 CUDA events. */
    const char *ex[] = {"--expect", "end.cuda_events_written=8", "--expect", "end.cuda_events_dropped=12",
                        "--expect", "end.sessions_written=2", "--expect", "end.sessions_dropped=2",
                        "--expect", "count.B=2", "--expect", "count.E=2", NULL};
    cr_assert_eq(check(file, ex), 0);
}

/* More events than the ring holds between two drains: the oldest are
 * overwritten and counted as dropped, the newest TG_TRACE_RING are written. */
Test(trace, ring_overwrites_oldest)
{
    setup_dir();
    tg_clock_init();
    tg_proc_configure(prefix);
    tg_trace_configure(1, 1000000);
    tg_trace_set_cuda_names(tg_cuda_fn_name, tg_cuda_kernel_name); /* as the constructor does */
    struct tg_thread t1 = mk_thread(1001);
    uint64_t now = tg_mono_ns();
    int total = TG_TRACE_RING + 100;
    for (int k = 0; k < total; k++)
        push(&t1, "cuCtxSynchronize", TG_CUDA_SYNC, now + (uint64_t)k * 2000,
             now + (uint64_t)k * 2000 + (uint64_t)(k % 1000), (uint64_t)k, 0);
    tg_trace_close();
    char w[64], d[64];
    snprintf(w, sizeof w, "end.cuda_events_written=%d", TG_TRACE_RING);
    const char *ex[] = {"--expect", w, "--expect", "end.cuda_events_dropped=100", "--consistent-tid", "1001", NULL};
    snprintf(d, sizeof d, "%d", 0);
    cr_assert_eq(check(file, ex), 0);
}

/* A producer thread pushes while this thread drains (session ends) at the
 * same time: every event is written whole or counted as dropped, in order. */
struct stress {
    struct tg_thread *t;
    int n;
    volatile int done;
};

static void *stress_producer(void *p)
{
    struct stress *s = p;
    uint64_t now = tg_mono_ns();
    for (int k = 1; k <= s->n; k++)
        push(s->t, "cuCtxSynchronize", TG_CUDA_SYNC, now + (uint64_t)k * 2000,
             now + (uint64_t)k * 2000 + (uint64_t)(k % 1000), (uint64_t)k, 0);
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

Test(trace, concurrent_drain_is_safe)
{
    setup_dir();
    tg_clock_init();
    tg_proc_configure(prefix);
    tg_trace_configure(1, 2000000000);
    tg_trace_set_cuda_names(tg_cuda_fn_name, tg_cuda_kernel_name); /* as the constructor does */
    struct tg_thread t1 = mk_thread(1001), t2 = mk_thread(1002);
    struct stress s = {&t2, 300000, 0};
    pthread_t th;
    pthread_create(&th, NULL, stress_producer, &s);
    while (!__atomic_load_n(&s.done, __ATOMIC_ACQUIRE)) {
        tg_trace_session_begin(&t1, "Autotuner.run", "k", 1);
        tg_trace_session_end(&t1);
    }
    pthread_join(th, NULL);
    tg_trace_close();
    struct tg_trace_stats st;
    tg_trace_get_stats(&st);
    cr_assert_eq(st.cuda_written + st.cuda_dropped, (uint64_t)s.n, "written %llu + dropped %llu != %d",
                 (unsigned long long)st.cuda_written, (unsigned long long)st.cuda_dropped, s.n);
    cr_log_info("concurrent: %llu written, %llu dropped", (unsigned long long)st.cuda_written,
                (unsigned long long)st.cuda_dropped);
    const char *ex[] = {"--consistent-tid", "1002", NULL};
    cr_assert_eq(check(file, ex), 0);
}

/* A process killed mid-session leaves a trace without ']' (and with an open
 * B): recoverable by the documented rule, and everything up to the race is
 * there because races flush. */
Test(trace, killed_process_trace_is_recoverable)
{
    setup_dir();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        tg_clock_init();
        tg_proc_configure(prefix);
        tg_trace_configure(1, 1000);
        struct tg_thread t1 = mk_thread(1001);
        static struct tg_report r;
        r.seq = 1;
        r.ts_ns = tg_mono_ns();
        r.entering.tid = 1002;
        r.inside.tid = 1001;
        snprintf(r.kernel, sizeof r.kernel, "k");
        tg_trace_session_begin(&t1, "Autotuner.run", "k", 1);
        push(&t1, "cuCtxSynchronize", TG_CUDA_SYNC, r.ts_ns, r.ts_ns + 10, 0, 0);
        tg_trace_race(&r);
        tg_trace_session_begin(&t1, "Autotuner.run", "k2", 2); /* buffered: lost */
        kill(getpid(), SIGKILL);
        _exit(3);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    snprintf(file, sizeof file, "%s.%ld.trace.json", prefix, (long)pid);
    const char *ex[] = {"--truncated", "--expect", "recovered=1", "--expect", "flows=1",
                        "--expect", "count.B=1", "--expect", "count.X=1", NULL};
    cr_assert_eq(check(file, ex), 0);
}

Test(trace, rank_in_file_name)
{
    setup_dir();
    setenv("RANK", "3", 1);
    tg_clock_init();
    tg_proc_configure(prefix);
    tg_trace_configure(1, 1000);
    tg_trace_set_cuda_names(tg_cuda_fn_name, tg_cuda_kernel_name); /* as the constructor does */
    struct tg_thread t1 = mk_thread(1001);
    tg_trace_session_begin(&t1, "Autotuner.run", "k", 1);
    tg_trace_session_end(&t1);
    tg_trace_close();
    char want[300];
    snprintf(want, sizeof want, "%s.rank3.%ld.trace.json", prefix, (long)getpid());
    cr_assert_str_eq(tg_trace_path(), want);
    cr_assert_eq(check(want, NULL), 0);
}
