/* The fatal-signal handler (reports/fatal.c) and crash-safety of reports:
 * children that crash (SIGSEGV, abort) leave a complete block in the report
 * and still die by their signal; a previously installed handler still runs;
 * a child SIGKILLed right after a race leaves complete, parseable reports. */
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "detectors/tuner_table.h"
#include "jsonl_check.h"
#include "reports/fatal.h"
#include "core/log.h"
#include "reports/native_stack.h"
#include "core/clock.h"
#include "core/thread_state.h"

static char dir[64], prefix[128];

static void setup_dir(void)
{
    fx_scratch_dir(dir, sizeof dir, "fatal");
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
}

static void reset_fatal_signals(void)
{
    /* Criterion's own handlers must not be what we chain to. */
    int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
}

/* Child: one thread "inside" a tuner, then a crash. */
static void child_setup_inside(void)
{
    reset_fatal_signals();
    tg_clock_init();
    tg_native_init();
    tg_proc_configure(prefix);
    struct tg_tuner *u = tg_tuner_get(0x7f3a1c2b4d10);
    tg_tuner_enter(u, tg__self(), NULL, NULL, tg_ticks(), 0);
    tg_tuner_enter(u, tg__self(), NULL, NULL, 0, 1);
    u->waiters = 1;
}

/* Child: one race report written (opens the report files), as a process
 * that raced before it crashed. */
static void child_emit_race(void)
{
    static struct tg_report r;
    fx_race_high(&r);
    r.pid = getpid();
    tg_sink_emit(&r);
}

static void check_block(const char *text, const char *sig, pid_t pid)
{
    char want[200];
    snprintf(want, sizeof want, "==================\nWARNING: tunerguard: fatal signal %s (pid=%d)\n", sig, (int)pid);
    cr_assert_not_null(strstr(text, want), "no header in:\n%s", text);
    snprintf(want, sizeof want, "  Received by thread tid=%d", (int)pid);
    cr_assert_not_null(strstr(text, want), "%s", text);
    cr_assert_not_null(strstr(text, "  Native stack of tid="), "%s", text);
    cr_assert_not_null(strstr(text, "    #0 0x"), "no native frame:\n%s", text);
    cr_assert_not_null(strstr(text, "(test_fatal+0x"), "main program frames not mapped to the module:\n%s", text);
    snprintf(want, sizeof want, "    instance 0x7f3a1c2b4d10: tid=%d inside for ", (int)pid);
    cr_assert_not_null(strstr(text, want), "no tuner state:\n%s", text);
    cr_assert_not_null(strstr(text, " (depth 2), 1 thread waiting\n"), "%s", text);
    cr_assert_not_null(strstr(text, "  <no Python interpreter running>\n"), "%s", text);
    snprintf(want, sizeof want, "SUMMARY: tunerguard: fatal signal %s in thread tid=%d (pid=%d)\n==================\n",
             sig, (int)pid, (int)pid);
    size_t lw = strlen(want), lt = strlen(text);
    cr_assert(lt >= lw && strcmp(text + lt - lw, want) == 0, "block does not end with the summary:\n%s", text);
}

static void txt_path(char *buf, size_t n, pid_t pid)
{
    snprintf(buf, n, "%s.%d.txt", prefix, (int)pid);
}

Test(fatal, segv_leaves_block_and_dies_by_segv)
{
    setup_dir();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_setup_inside();
        if (tg_fatal_install(0) != 1)
            _exit(10);
        volatile uintptr_t bad = 8;
        *(volatile int *)bad = 1;
        _exit(11);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st), "child exited with %d", WEXITSTATUS(st));
    cr_assert_eq(WTERMSIG(st), SIGSEGV);
    char path[256];
    txt_path(path, sizeof path, pid);
    const char *text = fx_slurp(path);
    check_block(text, "SIGSEGV", pid);
    cr_assert_not_null(strstr(text, ", fault address 0x8\n"), "%s", text);
    cr_assert_not_null(strstr(text, "was inside tuner instance 0x7f3a1c2b4d10.\n"), "%s", text);
    /* The JSON Lines record, in a file the handler created (no report before). */
    snprintf(path, sizeof path, "%s.%d.jsonl", prefix, (int)pid);
    const char *ex[] = {"1:kind=\"fatal\"", "1:seq=1", "1:mode=null", "1:signal=\"SIGSEGV\"", "1:signo=11",
                        "1:fault_addr=\"0x8\"", "1:tuner.instance=\"0x7f3a1c2b4d10\"",
                        "1:tuners.0.instance=\"0x7f3a1c2b4d10\"", "1:tuners.0.occupants.0.depth=2",
                        "1:tuners.0.waiters=1", "1:race_seq=null", "1:reports_before=0", NULL};
    cr_assert_eq(run_jsonl_checker(path, 1, ex), 0, "check_jsonl.py failed on %s", path);
    char want[64];
    snprintf(want, sizeof want, "\"tid\":%d,\"native\":[{", (int)pid);
    cr_assert_not_null(strstr(fx_slurp(path), want), "no receiving thread or no native frame:\n%s", fx_slurp(path));
    cr_assert_not_null(strstr(fx_slurp(path), "\"symbol\":\"?? (test_fatal+0x"), "%s", fx_slurp(path));
}

/* A race, then a crash of the thread that raced: the block and the JSON
 * record both name the race report of the session the thread died in, and
 * the record takes the next seq from the process's report counter. */
Test(fatal, crash_links_to_the_race_of_its_session)
{
    setup_dir();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_setup_inside();
        child_emit_race();
        static uint64_t reports = 1;
        struct tg_tuner *u = tg_tuner_get(0x7f3a1c2b4d10);
        struct tg_occupant *o = NULL; /* the one occupant, in whichever slot it took */
        for (int i = 0; i < TG_TUNER_MAX_OCC && !o; i++)
            if (u->occ_tid[i] != 0)
                o = &u->occ[i];
        cr_assert_not_null(o);
        o->race_seq = 1;
        o->raced_tid = 4243;
        snprintf(o->raced_name, sizeof o->raced_name, "worker-1");
        tg_fatal_set_context("detect", &reports);
        tg_fatal_install(0);
        volatile uintptr_t bad = 16;
        *(volatile int *)bad = 1;
        _exit(11);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    char path[256];
    txt_path(path, sizeof path, pid);
    const char *text = fx_slurp(path);
    cr_assert_not_null(strstr(text, "was inside tuner instance 0x7f3a1c2b4d10 in a session that raced with thread "
                                    "'worker-1' (tid=4243): race report #1 of this process.\n"), "%s", text);
    cr_assert_not_null(strstr(text, " (depth 2; raced, report #1), 1 thread waiting\n"), "%s", text);
    snprintf(path, sizeof path, "%s.%d.jsonl", prefix, (int)pid);
    const char *ex[] = {"1:kind=\"race\"", "2:kind=\"fatal\"", "2:seq=2", "2:mode=\"detect\"",
                        "2:fault_addr=\"0x10\"", "2:race_seq=1", "2:reports_before=1",
                        "2:tuners.0.occupants.0.race_seq=1", NULL};
    cr_assert_eq(run_jsonl_checker(path, 2, ex), 0, "check_jsonl.py failed on %s", path);
}

static int marker_fd = -1;

static void old_handler(int sig)
{
    static const char m[] = "old handler ran\n";
    if (write(marker_fd, m, sizeof m - 1) < 0)
        _exit(12);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* abort() with a handler installed before tunerguard's: ours writes the
 * block, the old one still runs, the process still dies by SIGABRT. */
Test(fatal, abort_chains_to_previous_handler)
{
    setup_dir();
    char marker[200];
    snprintf(marker, sizeof marker, "%s/marker", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_setup_inside();
        marker_fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        signal(SIGABRT, old_handler);
        tg_fatal_install(0);
        abort();
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status 0x%x", st);
    char path[256];
    txt_path(path, sizeof path, pid);
    check_block(fx_slurp(path), "SIGABRT", pid);
    cr_assert_str_eq(fx_slurp(marker), "old handler ran\n");
}

/* A report already written: the block is appended to the same file, after
 * the complete report. */
Test(fatal, block_follows_existing_report)
{
    setup_dir();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_setup_inside();
        child_emit_race();
        tg_fatal_install(0);
        raise(SIGBUS);
        _exit(11);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS);
    char path[256];
    txt_path(path, sizeof path, pid);
    const char *text = fx_slurp(path);
    const char *race = strstr(text, "WARNING: tunerguard: thread entered a tuner");
    const char *fatal = strstr(text, "WARNING: tunerguard: fatal signal SIGBUS");
    cr_assert(race && fatal && race < fatal, "expected the race report, then the fatal block:\n%s", text);
    check_block(fatal - strlen("==================\n"), "SIGBUS", pid);
}

/* The fallback files follow the rule of every writer (core/process.h): one
 * $RANK rule (RANK=3x: no rank anywhere; before, the record said rank 3),
 * and a new file under a new id when a symlink sits at the common name (its
 * target untouched; before, the block was appended to it). */
Test(fatal, fallback_files_named_like_the_reports)
{
    setup_dir();
    char target[200], link[300];
    snprintf(target, sizeof target, "%s/precious", dir);
    int tfd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(tfd >= 0 && write(tfd, "keep me\n", 8) == 8);
    close(tfd);
    for (int k = 0; k < 2; k++) {
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            setenv("RANK", k == 0 ? "3x" : "3", 1);
            snprintf(link, sizeof link, "%s%s.%d.txt", prefix, k == 0 ? "" : ".rank3", (int)getpid());
            if (symlink(target, link) < 0)
                _exit(12);
            child_setup_inside();
            tg_fatal_install(0);
            raise(SIGSEGV);
            _exit(11);
        }
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %d", st);
        cr_assert_str_eq(fx_slurp(target), "keep me\n", "the symlink's target was written");
        /* the one text and JSON Lines file of this pid: <prefix>[.rank3].<pid>.<n>.{txt,jsonl} */
        char pattern[300], txt[300] = "", jsonl[300];
        snprintf(pattern, sizeof pattern, "tg%s.%d.", k == 0 ? "" : ".rank3", (int)pid);
        DIR *d = opendir(dir);
        struct dirent *e;
        int ntxt = 0;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (!strncmp(e->d_name, pattern, strlen(pattern)) && n > 4 && !strcmp(e->d_name + n - 4, ".txt") &&
                strspn(e->d_name + strlen(pattern), "0123456789") == n - 4 - strlen(pattern) &&
                n - 4 > strlen(pattern)) {
                snprintf(txt, sizeof txt, "%s/%s", dir, e->d_name);
                ntxt++;
            }
        }
        closedir(d);
        cr_assert_eq(ntxt, 1, "RANK=%s: no single %s<n>.txt", k == 0 ? "3x" : "3", pattern);
        check_block(fx_slurp(txt), "SIGSEGV", pid);
        snprintf(jsonl, sizeof jsonl, "%.*s.jsonl", (int)(strlen(txt) - 4), txt);
        const char *ex0[] = {"1:kind=\"fatal\"", "1:rank=null", NULL};
        const char *ex1[] = {"1:kind=\"fatal\"", "1:rank=3", NULL};
        cr_assert_eq(run_jsonl_checker(jsonl, 1, k == 0 ? ex0 : ex1), 0, "check_jsonl.py failed on %s", jsonl);
    }
}

/* log_path=stderr: the block goes to fd 2. */
Test(fatal, stderr_mode_writes_to_fd2)
{
    setup_dir();
    char errf[200];
    snprintf(errf, sizeof errf, "%s/stderr", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        tg_log_note_start(); /* the stderr it started with (core/log.h) */
        child_setup_inside();
        tg_proc_configure("stderr");
        tg_fatal_install(0);
        raise(SIGFPE);
        _exit(11);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGFPE);
    check_block(fx_slurp(errf), "SIGFPE", pid);
    char path[256];
    struct stat sb;
    snprintf(path, sizeof path, "stderr.%d.jsonl", (int)pid);
    cr_assert_neq(stat(path, &sb), 0, "log_path=stderr wrote %s", path);
}

/* SIGKILL a millisecond after a race: the text and JSON Lines reports are
 * complete (written at detection) and parse. */
Test(fatal, sigkill_after_race_leaves_complete_reports)
{
    setup_dir();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        reset_fatal_signals();
        tg_proc_configure(prefix);
        static struct tg_report r;
        fx_race_high(&r);
        tg_sink_emit(&r);
        usleep(1000);
        kill(getpid(), SIGKILL);
        _exit(11);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    char path[256];
    txt_path(path, sizeof path, pid);
    const char *text = fx_slurp(path);
    cr_assert(strncmp(text, "==================\nWARNING: tunerguard: thread entered a tuner", 62) == 0, "%s", text);
    size_t n = strlen(text);
    cr_assert(n > 40 && strcmp(text + n - 19, "==================\n") == 0, "text report not complete:\n%s", text);
    cr_assert_not_null(strstr(text, "SUMMARY: tunerguard:"));
    snprintf(path, sizeof path, "%s.%d.jsonl", prefix, (int)pid);
    const char *ex[] = {"1:kind=\"race\"", "1:tuner.kernel=\"matmul_kernel\"", NULL};
    int rc = run_jsonl_checker(path, 1, ex);
    cr_assert_eq(rc, 0, "check_jsonl.py failed (%d)", rc);
}

/* The tuner state shows every occupant wherever its slot is (slots are not
 * compacted: a thread leaving clears its own, here the first), by the tid
 * copied at entry, never through its thread record (which may be a dead
 * thread's, reused since: here rewritten with another tid). */
Test(fatal, tuner_state_shows_every_slot_by_the_tid_copied_at_entry)
{
    setup_dir();
    tg_clock_init();
    static struct tg_thread a, b;
    a.tid = 1111;
    b.tid = 2222;
    struct tg_tuner *u = tg_tuner_get(0x7f3a1c2b4e20);
    tg_tuner_enter(u, &a, NULL, NULL, tg_ticks(), 0); /* slot 0 */
    tg_tuner_enter(u, &b, NULL, NULL, tg_ticks(), 0); /* slot 1 */
    cr_assert_eq(tg_tuner_leave(u, &a), 1);           /* slot 0 cleared; b stays in slot 1 */
    cr_assert_eq(u->nocc, 1);
    b.tid = 3333; /* the record is somebody else's now */
    char path[200];
    snprintf(path, sizeof path, "%s/block", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0);
    tg_fatal_write_block(fd, SIGSEGV, NULL);
    close(fd);
    const char *text = fx_slurp(path);
    cr_assert_not_null(strstr(text, "    instance 0x7f3a1c2b4e20: tid=2222 inside for "), "%s", text);
    cr_assert_null(strstr(text, "tid=3333"), "%s", text);
    cr_assert_null(strstr(text, "tid=0 "), "an empty slot shown:\n%s", text);
    cr_assert_null(strstr(text, "tid=1111"), "%s", text);
}

Test(fatal, install_requires_python_when_asked)
{
    /* This test binary has no libpython. */
    cr_assert_eq(tg_fatal_install(1), -1);
}

/* A report line cut by the signal (a line longer than the writer's buffer
 * goes out in pieces): the fatal record still starts a line of its own. */
Test(fatal, record_after_a_cut_line_stands_on_its_own_line)
{
    setup_dir();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        child_setup_inside();
        child_emit_race();
        int txt, jsonl;
        tg_sink_signal_fds(&txt, &jsonl);
        if (jsonl < 0 || write(jsonl, "{\"schema\":1,\"kind\":\"ra", 22) != 22)
            _exit(12);
        tg_fatal_install(0);
        raise(SIGSEGV);
        _exit(11);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status 0x%x", st);
    char path[256];
    snprintf(path, sizeof path, "%s.%d.jsonl", prefix, (int)pid);
    const char *text = fx_slurp(path);
    const char *cut = strstr(text, "{\"schema\":1,\"kind\":\"ra\n");
    cr_assert_not_null(cut, "the cut line was not ended before the record:\n%s", text);
    cr_assert(strncmp(cut + 23, "{\"schema\":2,\"kind\":\"fatal\"", 26) == 0, "no record on the next line:\n%s", text);
}
