/* Suppressions: the TSan template matcher (table-driven), the file parser's
 * errors, matching a race report (kernel, class, method, Python files of
 * either thread), per-pattern counts, trailing comments (docs/suppressions.md.s own
 * example must parse and match), the preload refusing a bad file with one
 * line and status 2 before the program runs, and a relative path that does
 * not resolve (a child in another directory) being a warning instead. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "detectors/suppress.h"
#include "reports/report.h"
#include "reports/suppress_load.h"

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

/* A '#' at the start of a line or after whitespace begins a comment; any
 * other '#' is part of the pattern; trailing whitespace never is. */
Test(suppress, parser_trailing_comments)
{
    static struct tg_supp_set set;
    static const struct {
        const char *line, *pattern;
    } cases[] = {
        {"race:^_l2norm_fwd_kernel$          # one kernel", "^_l2norm_fwd_kernel$"},
        {"race:fla/modules/\t# tab before the comment", "fla/modules/"},
        {"race:x # a # b", "x"},
        {"race:x #", "x"},
        {"race:x   \r", "x"},
        {"race:foo#bar", "foo#bar"},               /* '#' not after whitespace: pattern */
        {"race:foo#bar  # but this is a comment", "foo#bar"},
        {"race:#foo", "#foo"},                     /* after ':', not whitespace */
        {"race:a#", "a#"},
        {"race:my dir/x.py # c", "my dir/x.py"},   /* inner whitespace stays */
    };
    char err[200];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(parse(&set, cases[i].line, err, sizeof err), 0, "%s: %s", cases[i].line, err);
        cr_expect_eq(set.n, 1, "%s", cases[i].line);
        if (set.n == 1)
            cr_expect_str_eq(set.s[0].pattern, cases[i].pattern, "line '%s'", cases[i].line);
    }
    /* a line that is only a comment after the type is an empty pattern */
    cr_expect_eq(parse(&set, "race:   # nothing\n", err, sizeof err), -1);
    cr_expect_str_eq(err, "line 1: empty pattern");
    cr_expect_eq(parse(&set, "race: ^$ # nothing\n", err, sizeof err), -1);
    cr_expect_str_eq(err, "line 1: empty pattern");
    /* whole-line comments, indented or not, with or without a type */
    cr_expect_eq(parse(&set, "#race:x\n  # y\n\t#\nrace:z # w\n", err, sizeof err), 0, "%s", err);
    cr_expect_eq(set.n, 1);
    cr_expect_str_eq(set.s[0].pattern, "z");
    cr_expect_eq(set.s[0].line, 4);
}

Test(suppress, parser_errors_name_the_line)
{
    static struct tg_supp_set set;
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"race:a\n# c\nfoo:bar\n", "line 3: unknown type 'foo' (valid: race, interference)"},
        {"called_from_lib:libzmq.so\n", "line 1: unknown type 'called_from_lib' (valid: race, interference)"},
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

/* interference: lines suppress "tuning under load" reports (by kernel, by the
 * driver's kernel name, by the benchmarking thread's frames), race: lines do
 * not, and interference: lines never suppress a race. */
Test(suppress, interference_lines)
{
    static struct tg_supp_set set;
    static struct tg_report r;
    char err[200];
    mk_report(&r);
    r.kind = TG_REPORT_INTERFERENCE;
    snprintf(r.itf.cuda_kernel, sizeof r.itf.cuda_kernel, "l2norm_fwd_kernel_0d1d");
    static const struct {
        const char *file;
        int suppressed;
    } cases[] = {
        {"interference:l2norm_fwd\n", 1},
        {"interference:^l2norm_fwd_kernel_0d1d$\n", 1}, /* the driver's name */
        {"interference:train.py$\n", 1},                /* the benchmarking thread's frames */
        {"race:l2norm_fwd\n", 0},
        {"interference:matmul\n", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(parse(&set, cases[i].file, err, sizeof err), 0, "%s", err);
        cr_expect_eq(tg_supp_match_report(&set, &r) != NULL, cases[i].suppressed, "%s", cases[i].file);
    }
    mk_report(&r); /* a race on the same kernel */
    cr_assert_eq(parse(&set, "interference:l2norm_fwd\n", err, sizeof err), 0);
    cr_expect_null(tg_supp_match_report(&set, &r));
}

/* The example block of docs/suppressions.md, read from the
 * checkout this test was built from: every line parses, the comments are not
 * part of the patterns, and each line alone suppresses the fixture report
 * (its kernel, a file of the inside thread, a function of the entering one). */
Test(suppress, readme_example_parses_and_matches)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *slash = strrchr(path, '/');
    cr_assert_not_null(slash);
    snprintf(slash, sizeof path - (size_t)(slash - path), "/../../docs/suppressions.md");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    static char readme[1 << 17];
    size_t n = fread(readme, 1, sizeof readme - 1, f);
    fclose(f);
    readme[n] = '\0';
    const char *para = strstr(readme, "A suppressions file takes ThreadSanitizer's `race:` lines");
    cr_assert_not_null(para, "docs/suppressions.md has no suppressions paragraph");
    const char *open = strstr(para, "\n```\n");
    cr_assert_not_null(open);
    open += 5;
    const char *close = strstr(open, "\n```");
    cr_assert_not_null(close);
    static char block[4096];
    size_t blen = (size_t)(close - open) + 1;
    cr_assert_lt(blen, sizeof block);
    memcpy(block, open, blen);
    block[blen] = '\0';

    static struct tg_supp_set set;
    static struct tg_report r;
    char err[200];
    cr_assert_eq(parse(&set, block, err, sizeof err), 0, "docs/suppressions.md example: %s", err);
    int lines = 0;
    for (const char *l = block; *l; l = strchr(l, '\n') + 1)
        lines += strncmp(l, "race:", 5) == 0 || strncmp(l, "interference:", 13) == 0;
    cr_assert_eq(set.n, lines, "docs/suppressions.md example: %d race/interference lines, %d patterns", lines, set.n);
    cr_assert_geq(set.n, 3);
    for (int i = 0; i < set.n; i++) {
        const char *p = set.s[i].pattern;
        size_t len = strlen(p);
        cr_expect_null(strchr(p, '#'), "docs/suppressions.md example line %d: pattern '%s' kept its comment", set.s[i].line, p);
        cr_expect(len > 0 && p[len - 1] != ' ' && p[len - 1] != '\t', "pattern '%s' kept its spaces", p);
        static struct tg_supp_set one;
        one.n = 1;
        one.s[0] = set.s[i];
        one.s[0].hits = 0;
        mk_report(&r); /* a race, or for an interference: line the same kernel's interference report */
        if (strcmp(set.s[i].type, "interference") == 0)
            r.kind = TG_REPORT_INTERFERENCE;
        cr_expect_not_null(tg_supp_match_report(&one, &r), "docs/suppressions.md example line %d ('%s') does not match", set.s[i].line,
                           p);
    }
    /* as docs/suppressions.md has them */
    cr_expect_str_eq(set.s[0].pattern, "^_l2norm_fwd_kernel$");
    cr_expect_str_eq(set.s[1].pattern, "fla/modules/");
    cr_expect_str_eq(set.s[2].pattern, "^Model.forward$");
    cr_expect_str_eq(set.s[3].type, "interference");
    cr_expect_str_eq(set.s[3].pattern, "^_l2norm_fwd_kernel$");
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
    snprintf(want, sizeof want, "suppressions file '%s' line 3: unknown type 'foo' (valid: race, interference)", p);
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

/* A FIFO (or anything not a regular file) is refused at once, never read:
 * before, the open blocked until a writer came. */
Test(suppress, loader_refuses_fifo_without_blocking, .timeout = 20)
{
    char fifo[] = "/tmp/tg_supp_fifo_XXXXXX";
    cr_assert_not_null(mkdtemp(fifo));
    char path[64], err[600], want[200];
    snprintf(path, sizeof path, "%s/s", fifo);
    cr_assert_eq(mkfifo(path, 0644), 0);
    alarm(10);
    cr_expect_eq(tg_supp_load(path, err, sizeof err), -1);
    alarm(0);
    snprintf(want, sizeof want, "suppressions file '%s': not a regular file (a FIFO)", path);
    cr_expect_str_eq(err, want);
    unlink(path);
    rmdir(fifo);
}

/* The preload refuses a bad file before the program runs: exit status 2 and
 * one stderr line naming the file and the line. */
/* prog (Python: run with -c code, "pass" when code is NULL) started in cwd
 * (NULL: ours) with only the preload, the options and PATH in its
 * environment; its stderr in out, its exit status returned. */
static int run_preloaded_in(const char *cwd, const char *prog, const char *code, const char *opts, char *out,
                            size_t outlen)
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
    if (cwd)
        posix_spawn_file_actions_addchdir_np(&fa, cwd);
    /* A Python child that does nothing: suppressions are read in Python
     * processes only (non-Python children of a job must stay untouched). */
    char *pyargv[] = {(char *)prog, "-c", (char *)(code ? code : "pass"), NULL};
    char *trueargv[] = {(char *)prog, NULL};
    char **argv = strstr(prog, "python") ? pyargv : trueargv;
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, prog, &fa, NULL, argv, envp), 0);
    int st;
    waitpid(pid, &st, 0);
    lseek(efd, 0, SEEK_SET);
    ssize_t k = read(efd, out, outlen - 1);
    out[k > 0 ? k : 0] = '\0';
    posix_spawn_file_actions_destroy(&fa);
    close(efd);
    unlink(errf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run_preloaded_exe(const char *prog, const char *opts, char *out, size_t outlen)
{
    return run_preloaded_in(NULL, prog, NULL, opts, out, outlen);
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
    snprintf(want, sizeof want, "tunerguard: suppressions file '%s' line 3: unknown type 'deadlock' (valid: race, interference)\n", p);
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

/* A relative path is resolved in each process's own directory, and
 * tunerguard never rewrites the environment its children inherit.  Where it
 * does not resolve (ENOENT, ENOTDIR) the process gets one warning line and
 * runs without suppressions; anything else wrong with the file still stops
 * it with status 2. */
static int starts_ends(const char *s, const char *head, const char *tail)
{
    size_t n = strlen(s), h = strlen(head), t = strlen(tail);
    return n >= h + t && strncmp(s, head, h) == 0 && strcmp(s + n - t, tail) == 0 &&
           strchr(s, '\n') == s + n - 1; /* exactly one line */
}

Test(suppress, relative_path_that_does_not_resolve_is_a_warning)
{
    char dir[] = "/tmp/tg_supp_dir_XXXXXX", path[200], out[2000];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/supp.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("race:hammer_kernel   # trailing comment\n", f);
    fclose(f);
    const char *tail = " runs without suppressions (a relative path is resolved in each process's directory: "
                       "use an absolute path)\n";

    /* the parent, started in dir, reads it; its child started in / does not
     * find it and runs (before: the child exited 2, and the parent 12) */
    cr_expect_eq(run_preloaded_in(dir, "/usr/bin/python3",
                                  "import subprocess, sys\n"
                                  "sys.exit(10 + subprocess.run([sys.executable, '-c', 'pass'], cwd='/').returncode)",
                                  "suppressions=supp.txt", out, sizeof out),
                 10, "%s", out);
    cr_expect(starts_ends(out,
                          "tunerguard: suppressions file 'supp.txt': cannot read (No such file or directory) from /; "
                          "pid ",
                          tail),
              "got: %s", out);

    /* the same in the process the user started: a warning, status 0 */
    cr_expect_eq(run_preloaded_in(dir, "/usr/bin/python3", NULL, "suppressions=nosuch.txt", out, sizeof out), 0);
    char head[300];
    snprintf(head, sizeof head,
             "tunerguard: suppressions file 'nosuch.txt': cannot read (No such file or directory) from %s; pid ", dir);
    cr_expect(starts_ends(out, head, tail), "got: %s", out);
    /* a file where a directory should be: ENOTDIR, does not resolve either */
    cr_expect_eq(run_preloaded_in(dir, "/usr/bin/python3", NULL, "suppressions=supp.txt/x", out, sizeof out), 0);
    cr_expect(strstr(out, "cannot read (Not a directory)") && strstr(out, tail), "got: %s", out);

    /* an absolute path that does not exist still stops the process */
    char opts[300];
    snprintf(opts, sizeof opts, "suppressions=%s/nosuch.txt", dir);
    cr_expect_eq(run_preloaded_in(dir, "/usr/bin/python3", NULL, opts, out, sizeof out), 2);
    /* and so does a relative path that resolves to something unreadable or
     * wrong */
    cr_expect_eq(run_preloaded_in("/tmp", "/usr/bin/python3", NULL, "suppressions=.", out, sizeof out), 2);
    cr_expect_str_eq(out, "tunerguard: suppressions file '.': not a regular file (a directory)\n");
    snprintf(path, sizeof path, "%s/bad.txt", dir);
    f = fopen(path, "w");
    fputs("race:ok\nmutex:x\n", f);
    fclose(f);
    cr_expect_eq(run_preloaded_in(dir, "/usr/bin/python3", NULL, "suppressions=bad.txt", out, sizeof out), 2);
    cr_expect_str_eq(out, "tunerguard: suppressions file 'bad.txt' line 2: unknown type 'mutex' (valid: race, interference)\n");
    /* a good relative file: silent */
    cr_expect_eq(run_preloaded_in(dir, "/usr/bin/python3", NULL, "suppressions=supp.txt", out, sizeof out), 0);
    cr_expect_str_eq(out, "");

    unlink(path);
    snprintf(path, sizeof path, "%s/supp.txt", dir);
    unlink(path);
    rmdir(dir);
}
