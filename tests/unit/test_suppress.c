/* Suppressions: the TSan template matcher (table-driven), the file parser's
 * errors, matching a race report (kernel, class, method, Python files of
 * either thread), per-pattern counts, and the preload refusing a bad file
 * with one line and status 2 before the program runs. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "detectors/suppress.h"
#include "reports/report.h"
#include "shim/suppress_load.h"

extern char **environ;

Test(suppress, template_matching_table)
{
    static const struct {
        const char *pat, *str;
        int want;
    } cases[] = {
        {"matmul", "matmul_kernel", 1},          /* implicit * at both ends */
        {"kernel", "matmul_kernel", 1},
        {"mat*kern", "matmul_kernel", 1},
        {"^matmul", "matmul_kernel", 1},
        {"^kernel", "matmul_kernel", 0},
        {"kernel$", "matmul_kernel", 1},
        {"matmul$", "matmul_kernel", 0},
        {"^matmul_kernel$", "matmul_kernel", 1},
        {"^matmul_kernel$", "matmul_kernel2", 0},
        {"^matmul$", "matmul_kernel", 0},
        {"foo$", "foofoo", 1},                   /* suffix, not first occurrence */
        {"^a*b*c$", "aXXbYYc", 1},
        {"^a*b*c$", "aXXcYYb", 0},
        {"*", "anything", 1},
        {"^*$", "x", 1},
        {"fla/modules/*.py", "/site/fla/modules/l2norm.py", 1},
        {"fla/modules/*.py", "/site/fla/ops/l2norm.py", 0},
        {"^/site/", "/site/x.py", 1},
        {"x", "", 0},                            /* empty string never matches */
        {"", "x", 0},                            /* nor an empty pattern */
        {"**a**", "bab", 1},
        {"a*a*a", "aaa", 1},
        {"a*a*a", "aa", 0},
        {"Autotuner.run", "Autotuner.run", 1},
        {"autotuner.run", "Autotuner.run", 0},   /* case-sensitive, like TSan */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(tg_supp_match(cases[i].pat, cases[i].str), cases[i].want, "pattern '%s' vs '%s': want %d",
                     cases[i].pat, cases[i].str, cases[i].want);
}

static int parse(struct tg_supp_set *set, const char *text, char *err, size_t n)
{
    memset(set, 0, sizeof *set);
    err[0] = '\0';
    return tg_supp_parse(set, text, strlen(text), err, n);
}

Test(suppress, parser_accepts_comments_blanks_and_spaces)
{
    static struct tg_supp_set set;
    char err[200];
    cr_assert_eq(parse(&set, "# header\n\n  race:matmul_*  \r\n\t# indented comment\nrace: ^fla/ \nrace:x", err,
                       sizeof err),
                 0, "%s", err);
    cr_assert_eq(set.n, 3);
    cr_assert_str_eq(set.s[0].pattern, "matmul_*");
    cr_assert_eq(set.s[0].line, 3);
    cr_assert_str_eq(set.s[1].pattern, "^fla/");
    cr_assert_eq(set.s[1].line, 5);
    cr_assert_str_eq(set.s[2].pattern, "x"); /* last line without a newline */
}

Test(suppress, parser_errors_name_the_line)
{
    static struct tg_supp_set set;
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"race:a\n# c\nfoo:bar\n", "line 3: unknown type 'foo' (valid: race)"},
        {"called_from_lib:libzmq.so\n", "line 1: unknown type 'called_from_lib' (valid: race)"},
        {"\nmatmul_kernel\n", "line 2: expected type:pattern, e.g. race:matmul_kernel, got 'matmul_kernel'"},
        {"race:\n", "line 1: empty pattern"},
        {"race:   \n", "line 1: empty pattern"},
        {"race:^$\n", "line 1: empty pattern"},
    };
    char err[200];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(parse(&set, cases[i].text, err, sizeof err), -1, "accepted: %s", cases[i].text);
        cr_expect_str_eq(err, cases[i].err);
    }
    char big[400] = "race:";
    memset(big + 5, 'a', 300);
    big[305] = '\0';
    cr_expect_eq(parse(&set, big, err, sizeof err), -1);
    cr_expect_str_eq(err, "line 1: pattern longer than 255 bytes");
}

static void mk_report(struct tg_report *r)
{
    memset(r, 0, sizeof *r);
    r->kind = TG_REPORT_RACE;
    snprintf(r->kernel, sizeof r->kernel, "_l2norm_fwd_kernel");
    snprintf(r->tuner_class, sizeof r->tuner_class, "fla.ops.utils.CachedAutotuner");
    snprintf(r->method, sizeof r->method, "CachedAutotuner.run");
    r->entering.npy = 2;
    snprintf(r->entering.py[0].file, sizeof r->entering.py[0].file, "/site/triton/runtime/autotuner.py");
    snprintf(r->entering.py[1].file, sizeof r->entering.py[1].file, "/home/me/train.py");
    snprintf(r->entering.py[1].func, sizeof r->entering.py[1].func, "Model.forward");
    r->inside.npy = 1;
    snprintf(r->inside.py[0].file, sizeof r->inside.py[0].file, "/site/fla/modules/l2norm.py");
}

Test(suppress, report_matching_and_counts)
{
    static struct tg_supp_set set;
    static struct tg_report r;
    char err[200];
    mk_report(&r);
    static const struct {
        const char *file;
        int want_line; /* 0: not suppressed */
    } cases[] = {
        {"race:l2norm_fwd\n", 1},                         /* kernel */
        {"race:^fla.ops.utils.CachedAutotuner$\n", 1},    /* class */
        {"race:^CachedAutotuner.run$\n", 1},              /* method */
        {"race:train.py$\n", 1},                          /* entering thread's file */
        {"race:fla/modules/*.py\n", 1},                   /* inside thread's file */
        {"race:^Model.forward$\n", 1},                    /* a function of the entering thread */
        {"race:^forward$\n", 0},                          /* ... anchored: the whole qualified name */
        {"race:matmul\nrace:^train\nrace:l2norm\n", 3},   /* first match wins */
        {"race:matmul\nrace:^autotuner.py\n", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(parse(&set, cases[i].file, err, sizeof err), 0, "%s", err);
        const struct tg_supp *s = tg_supp_match_report(&set, &r);
        if (!cases[i].want_line) {
            cr_expect_null(s, "suppressed by %s", cases[i].file);
            continue;
        }
        cr_expect_not_null(s, "not suppressed by %s", cases[i].file);
        if (s) {
            cr_expect_eq(s->line, cases[i].want_line);
            cr_expect_eq(s->hits, 1);
        }
    }
    /* counts accumulate; other kinds are never suppressed */
    cr_assert_eq(parse(&set, "race:l2norm\n", err, sizeof err), 0);
    for (int k = 0; k < 5; k++)
        tg_supp_match_report(&set, &r);
    cr_expect_eq(set.s[0].hits, 5);
    r.kind = TG_REPORT_METHOD_REPLACED;
    cr_expect_null(tg_supp_match_report(&set, &r));
}

static char tmpfile_path[64];

static const char *write_tmp(const char *text)
{
    snprintf(tmpfile_path, sizeof tmpfile_path, "/tmp/tg_supp_XXXXXX");
    int fd = mkstemp(tmpfile_path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return tmpfile_path;
}

Test(suppress, loader_messages)
{
    char err[600];
    cr_expect_eq(tg_supp_load("/nonexistent/supp.txt", err, sizeof err), -1);
    cr_expect_str_eq(err, "suppressions file '/nonexistent/supp.txt': cannot read (No such file or directory)");
    const char *p = write_tmp("race:ok\n\nfoo:bar\n");
    char want[300];
    snprintf(want, sizeof want, "suppressions file '%s' line 3: unknown type 'foo' (valid: race)", p);
    cr_expect_eq(tg_supp_load(p, err, sizeof err), -1);
    cr_expect_str_eq(err, want);
    unlink(p);
    p = write_tmp("race:_l2norm\n");
    cr_expect_eq(tg_supp_load(p, err, sizeof err), 0, "%s", err);
    unlink(p);
    static struct tg_report r;
    mk_report(&r);
    cr_expect_eq(tg_supp_check(&r), 1);
    cr_expect_eq(tg_supp_check(&r), 1);
    cr_expect_eq(tg_supp_total(), 2);
}

/* The preload refuses a bad file before the program runs: exit status 2 and
 * one stderr line naming the file and the line. */
static int run_preloaded_exe(const char *prog, const char *opts, char *out, size_t outlen)
{
    char exe[1024], lib[1100], preload[1200], options[600];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(n > 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(lib, sizeof lib, "%s/../libtunerguard.so", exe);
    cr_assert_eq(access(lib, R_OK), 0, "no %s", lib);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lib);
    snprintf(options, sizeof options, "TUNERGUARD_OPTIONS=%s", opts);
    char *envp[] = {preload, options, "PATH=/usr/bin:/bin", NULL};
    char errf[] = "/tmp/tg_supp_err_XXXXXX";
    int efd = mkstemp(errf);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, efd, 2);
    /* A Python child that does nothing: suppressions are read in Python
     * processes only (non-Python children of a job must stay untouched). */
    char *pyargv[] = {(char *)prog, "-c", "pass", NULL};
    char *trueargv[] = {(char *)prog, NULL};
    char **argv = strstr(prog, "python") ? pyargv : trueargv;
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, prog, &fa, NULL, argv, envp), 0);
    int st;
    waitpid(pid, &st, 0);
    lseek(efd, 0, SEEK_SET);
    ssize_t k = read(efd, out, outlen - 1);
    out[k > 0 ? k : 0] = '\0';
    close(efd);
    unlink(errf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Debian's python3 (on every machine of this project), as a Python child. */
static int run_preloaded(const char *opts, char *out, size_t outlen)
{
    return run_preloaded_exe("/usr/bin/python3", opts, out, outlen);
}

Test(suppress, preload_refuses_bad_file_with_status_2)
{
    char out[1000], want[400];
    const char *p = write_tmp("# mine\nrace:matmul\ndeadlock:x\n");
    char opts[200];
    snprintf(opts, sizeof opts, "suppressions=%s", p);
    cr_expect_eq(run_preloaded(opts, out, sizeof out), 2);
    snprintf(want, sizeof want, "tunerguard: suppressions file '%s' line 3: unknown type 'deadlock' (valid: race)\n", p);
    cr_expect_str_eq(out, want);
    unlink(p);
    cr_expect_eq(run_preloaded("suppressions=/nonexistent/s.txt", out, sizeof out), 2);
    cr_expect_str_eq(out,
                     "tunerguard: suppressions file '/nonexistent/s.txt': cannot read (No such file or directory)\n");
    p = write_tmp("race:fine\n");
    snprintf(opts, sizeof opts, "suppressions=%s", p);
    cr_expect_eq(run_preloaded(opts, out, sizeof out), 0);
    cr_expect_str_eq(out, "");
    unlink(p);
    /* A process that is not Python never reads the file: a relative path
     * that does not resolve in its directory must not stop it. */
    cr_expect_eq(run_preloaded_exe("/bin/true", "suppressions=no/such/file.txt", out, sizeof out), 0);
    cr_expect_str_eq(out, "");
}
