/* The report sink: lazy files named with pid (and rank), stderr mode, the
 * fallback to stderr when the directory is missing or the disk is full,
 * fork, symbolization of the written copy, and the at-exit summary line. */
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "jsonl_check.h"
#include "reports/native_stack.h"

static char dir[64];
static char errpath[128];

/* A fresh directory to work in, and stderr captured into a file there. */
static void setup(void)
{
    fx_scratch_dir(dir, sizeof dir, "sink");
    snprintf(errpath, sizeof errpath, "%s/stderr.log", dir);
    fx_capture_stderr(errpath);
}

static char *path_in_dir(const char *fmt, long a)
{
    static char p[4][256];
    static int k;
    char name[128];
    snprintf(name, sizeof name, fmt, a);
    char *out = p[k++ & 3];
    snprintf(out, 256, "%s/%s", dir, name);
    return out;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

Test(sink, files_created_on_first_report_only, .init = setup)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
    char *txt = path_in_dir("tg.%ld.txt", getpid()), *jsonl = path_in_dir("tg.%ld.jsonl", getpid());
    cr_assert_str_eq(tg_sink_text_path(), "");
    cr_assert(!exists(txt) && !exists(jsonl));

    static struct tg_report a, b;
    fx_race_high(&a);
    fx_race_low(&b);
    b.rank = -1;
    cr_assert_eq(tg_sink_emit(&a), 0);
    cr_assert_eq(tg_sink_emit(&b), 0);
    cr_assert_str_eq(tg_sink_text_path(), txt);

    char *t = fx_read_file(txt);
    cr_assert(t, "%s missing", txt);
    cr_assert_eq(count(t, "WARNING: tunerguard: "), 2);
    cr_assert_eq(count(t, "SUMMARY: tunerguard: "), 2);
    free(t);
    const char *expects[] = {"1:seq=1", "2:seq=2", "2:severity=\"low\"", NULL};
    cr_assert_eq(run_jsonl_checker(jsonl, 2, expects), 0);
    char *e = fx_read_file(errpath);
    cr_assert_str_eq(e, "", "nothing on stderr, got: %s", e);
    free(e);
}

Test(sink, rank_in_file_name, .init = setup)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
    setenv("RANK", "5", 1);
    static struct tg_report a;
    fx_race_high(&a);              /* rank -1 in the report: $RANK is used */
    cr_assert_eq(tg_sink_emit(&a), 0);
    cr_assert(exists(path_in_dir("tg.rank5.%ld.txt", getpid())));
    cr_assert(exists(path_in_dir("tg.rank5.%ld.jsonl", getpid())));
}

Test(sink, log_path_stderr, .init = setup)
{
    cr_assert_eq(chdir(dir), 0);
    tg_proc_configure("stderr");
    static struct tg_report a;
    fx_race_high(&a);
    cr_assert_eq(tg_sink_emit(&a), 0);
    cr_assert_str_eq(tg_sink_text_path(), "stderr");
    char *e = fx_read_file(errpath);
    cr_assert(!strncmp(e, "==================\nWARNING: tunerguard: ", 40), "got: %s", e);
    cr_assert_eq(count(e, "SUMMARY: tunerguard:"), 1);
    free(e);
    cr_assert(!exists(path_in_dir("stderr.%ld.txt", getpid())));
    cr_assert(!exists(path_in_dir("stderr.%ld.jsonl", getpid())));
}

Test(sink, missing_directory_falls_back_to_stderr, .init = setup)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/no/such/dir/tg", dir);
    tg_proc_configure(prefix);
    static struct tg_report a;
    fx_race_high(&a);
    cr_assert_eq(tg_sink_emit(&a), 0);
    cr_assert_eq(tg_sink_emit(&a), 0);
    cr_assert_str_eq(tg_sink_text_path(), "stderr");
    char *e = fx_read_file(errpath);
    char want[300];
    snprintf(want, sizeof want,
             "tunerguard: cannot write report file %s.%ld.txt (No such file or directory); "
             "reports go to stderr instead\n==================\n", prefix, (long)getpid());
    cr_assert(!strncmp(e, want, strlen(want)), "got: %s", e);
    cr_assert_eq(count(e, "tunerguard: cannot write"), 1, "one warning line only");
    cr_assert_eq(count(e, "SUMMARY: tunerguard:"), 2, "both reports on stderr");
    free(e);
}

/* Disk full mid-run: after two reports no report file may grow (RLIMIT_FSIZE
 * at the text file's size, which stderr's file stays under; SIGXFSZ ignored:
 * EFBIG).  One warning for each file, then the whole failed report on
 * stderr; the JSON file keeps its two whole lines. */
Test(sink, disk_full_falls_back_to_stderr, .init = setup)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
    static struct tg_report a;
    fx_race_high(&a);
    cr_assert_eq(tg_sink_emit(&a), 0);
    cr_assert_eq(tg_sink_emit(&a), 0);
    int txt, jsonl;
    struct stat st;
    tg_sink_signal_fds(&txt, &jsonl);
    cr_assert(txt > 2 && jsonl > 2 && fstat(txt, &st) == 0);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {(rlim_t)st.st_size, (rlim_t)st.st_size};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    cr_assert_eq(tg_sink_emit(&a), 0);
    char *e = fx_read_file(errpath);
    cr_assert(strstr(e, "tunerguard: cannot write report file ") && strstr(e, "(File too large); reports go to stderr instead\n"),
              "got: %s", e);
    cr_assert_eq(count(e, "tunerguard: cannot write"), 2, "got: %s", e);
    cr_assert_eq(count(e, "WARNING: tunerguard:"), 1);
    cr_assert_eq(count(e, "SUMMARY: tunerguard:"), 1);
    free(e);
    cr_assert_eq(run_jsonl_checker(path_in_dir("tg.%ld.jsonl", getpid()), 2, NULL), 0);
}

static void fork_case(int call_atfork)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
    static struct tg_report a;
    fx_race_high(&a);
    cr_assert_eq(tg_sink_emit(&a), 0);
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        if (call_atfork)
            tg_sink_atfork_child();
        int rc = tg_sink_emit(&a);
        _exit(rc == 0 ? 0 : 1);
    }
    int st;
    cr_assert_eq(waitpid(child, &st, 0), child);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *p = fx_read_file(path_in_dir("tg.%ld.txt", getpid()));
    char *c = fx_read_file(path_in_dir("tg.%ld.txt", child));
    cr_assert(p && c, "parent and child files both exist");
    cr_assert_eq(count(p, "SUMMARY: tunerguard:"), 1, "the child did not write into the parent's file");
    cr_assert_eq(count(c, "SUMMARY: tunerguard:"), 1);
    free(p);
    free(c);
    cr_assert_eq(run_jsonl_checker(path_in_dir("tg.%ld.jsonl", child), 1, NULL), 0);
}

Test(sink, fork_child_opens_its_own_files, .init = setup)
{
    fork_case(1);
}

Test(sink, fork_child_detected_without_atfork_call, .init = setup)
{
    fork_case(0);
}

__attribute__((noinline, noclone)) static int capture_here(void **f)
{
    int n = tg_native_capture(f, TG_MAX_NATIVE_FRAMES, 0);
    __asm__ volatile("" ::: "memory");
    return n;
}

/* The sink symbolizes its own copy: the caller's report stays untouched. */
Test(sink, written_report_is_symbolized, .init = setup)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
    tg_native_init();
    static struct tg_report a;
    fx_race_high(&a);
    a.entering.nsym = 0;
    a.entering.nnative = capture_here(a.entering.native);
    cr_assert_gt(a.entering.nnative, 1);
    cr_assert_eq(tg_sink_emit(&a), 0);
    cr_assert_eq(a.entering.nsym, 0);
    char *t = fx_read_file(path_in_dir("tg.%ld.txt", getpid()));
    cr_assert(strstr(t, "    Native (at entry):\n      #0 capture_here"), "got: %s", t);
    free(t);
    cr_assert_eq(run_jsonl_checker(path_in_dir("tg.%ld.jsonl", getpid()), 1, NULL), 0);
}

Test(sink, signal_fds, .init = setup)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
    int t, j;
    tg_sink_signal_fds(&t, &j);
    cr_assert(t == -1 && j == -1, "nothing open before the first report");
    static struct tg_report a;
    fx_race_high(&a);
    cr_assert_eq(tg_sink_emit(&a), 0);
    tg_sink_signal_fds(&t, &j);
    cr_assert(t > 2 && j > 2 && t != j);
    /* a write through them lands in the report files */
    cr_assert_eq(tg_report_write_text(t, &a), 0);
    char *txt = fx_read_file(path_in_dir("tg.%ld.txt", getpid()));
    cr_assert_eq(count(txt, "SUMMARY: tunerguard:"), 2);
    free(txt);
}

/* A relative log_path is resolved against the directory of the first use
 * (arming, in the preload): the sink names the absolute path, and a
 * chdir() after that does not move the files. */
Test(sink, relative_log_path_made_absolute, .init = setup)
{
    cr_assert_eq(chdir(dir), 0);
    char cwd[200];
    cr_assert(getcwd(cwd, sizeof cwd));
    tg_proc_configure("./tg");
    tg_proc_arm();
    cr_assert_eq(chdir("/"), 0);
    static struct tg_report a;
    fx_race_high(&a);
    cr_assert_eq(tg_sink_emit(&a), 0);
    char want[300];
    snprintf(want, sizeof want, "%s/tg.%ld.txt", cwd, (long)getpid());
    cr_assert_str_eq(tg_sink_text_path(), want);
    cr_assert(exists(path_in_dir("tg.%ld.jsonl", getpid())));
    char in_root[64];
    snprintf(in_root, sizeof in_root, "/tg.%ld.txt", (long)getpid());
    cr_assert(!exists(in_root), "the chdir moved the report");
}
