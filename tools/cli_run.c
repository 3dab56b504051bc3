/* tunerguard run: run a program with libtunerguard.so preloaded.
 *
 * Contract: LD_PRELOAD becomes "<lib>[:<preloads already set>]" (never
 * dropping what was there); TUNERGUARD_OPTIONS becomes "<already set>:<ours>"
 * (the library's parser lets a later key win, so ours win).  The log_path
 * in force (--report-dir DIR/tunerguard, else the one already set, else the
 * default ./tunerguard) is made absolute against the directory run was
 * started in and passed as the last log_path= (quoted when it holds ':' or
 * whitespace), so every child writes its reports there whatever directory it
 * changes to.  The program's exit status is passed through (128+N for signal
 * N, 127/126 when it cannot be executed); afterwards one stderr line per
 * report file the run created or changed under that prefix, or "no report
 * files" (a report the library could only write to stderr is above it).
 * A --report-dir that cannot be created (or is not a directory) is status 2
 * before anything runs. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child_pid;

static void forward(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

/* A report file name: BASE.<pid>.* or BASE.rank<R>.<pid>.* */
static int is_report_name(const char *name, const char *base)
{
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) != 0 || name[bl] != '.')
        return 0;
    const char *r = name + bl + 1;
    if (strncmp(r, "rank", 4) == 0)
        r += 4;
    return *r >= '0' && *r <= '9';
}

struct snap_entry {
    char *name;
    struct timespec mtime;
    off_t size;
};

struct snap {
    struct snap_entry *e;
    size_t n;
};

static void take_snapshot(const char *dir, const char *base, struct snap *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    size_t cap = 0;
    while ((e = readdir(d))) {
        if (!is_report_name(e->d_name, base))
            continue;
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (s->n == cap) {
            cap = cap ? cap * 2 : 16;
            s->e = realloc(s->e, cap * sizeof *s->e);
            if (!s->e)
                abort();
        }
        s->e[s->n++] = (struct snap_entry){strdup(e->d_name), st.st_mtim, st.st_size};
    }
    closedir(d);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct snap_entry *)a)->name, ((const struct snap_entry *)b)->name);
}

static void free_snapshot(struct snap *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->e[i].name);
    free(s->e);
    s->e = NULL;
    s->n = 0;
}


/* S as one shell word: unchanged when it needs no quoting, else in '...'. */
static void shell_word(const char *s, char *out, size_t n)
{
    if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=.,/@%") == strlen(s)) {
        snprintf(out, n, "%s", s);
        return;
    }
    struct cli_buf b = {0};
    cli_buf_puts(&b, "'");
    for (const char *c = s; *c; c++) {
        if (*c == '\'')
            cli_buf_puts(&b, "'\\''");
        else
            cli_buf_add(&b, c, 1);
    }
    cli_buf_puts(&b, "'");
    snprintf(out, n, "%s", b.s);
    cli_buf_free(&b);
}

static void print_reports(const char *log_path, const struct snap *before)
{
    if (strcmp(log_path, "stderr") == 0) {
        fputs("tunerguard: log_path=stderr: reports, if any, are above\n", stderr);
        return;
    }
    char dir[PATH_MAX], base[PATH_MAX];
    const char *slash = strrchr(log_path, '/');
    if (slash) {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - log_path), log_path);
        if (!dir[0])
            strcpy(dir, "/");
        snprintf(base, sizeof base, "%s", slash + 1);
    } else {
        strcpy(dir, ".");
        snprintf(base, sizeof base, "%s", log_path);
    }
    struct snap after;
    take_snapshot(dir, base, &after);
    if (after.n)
        qsort(after.e, after.n, sizeof *after.e, cmp_entry);
    size_t shown = 0;
    for (size_t i = 0; i < after.n; i++) {
        int changed = 1;
        for (size_t j = 0; j < before->n; j++) {
            const struct snap_entry *x = &before->e[j], *y = &after.e[i];
            if (strcmp(x->name, y->name) == 0) {
                changed = x->size != y->size || x->mtime.tv_sec != y->mtime.tv_sec ||
                          x->mtime.tv_nsec != y->mtime.tv_nsec;
                break;
            }
        }
        if (!changed)
            continue;
        cli_errf("report: %s%s%s", dir, strcmp(dir, "/") ? "/" : "", after.e[i].name);
        shown++;
    }
    if (shown) {
        char word[4 * PATH_MAX];
        shell_word(dir, word, sizeof word);
        /* The command as sh reads it: written as is (cli_errf would double
         * its backslashes, '\'' among them), unless the name holds bytes
         * that cli_errf shows escaped (control or invalid UTF-8 bytes: not
         * for the terminal), and then with a word on why. */
        struct cli_buf esc = {0};
        size_t backslashes = 0;
        for (const char *c = word; *c; c++)
            backslashes += *c == '\\';
        cli_buf_put_esc(&esc, word, strlen(word));
        if (esc.s && strlen(esc.s) == strlen(word) + backslashes)
            fprintf(stderr, "tunerguard: summarize with: tunerguard report %s\n", word);
        else
            cli_errf("summarize with: tunerguard report %s (the folder's name holds control or non-UTF-8 bytes, "
                     "shown escaped: type its name yourself)", word);
        cli_buf_free(&esc);
    } else {
        cli_errf("no report files (%s.<pid>.*)", log_path);
    }
    free_snapshot(&after);
}

/* The quote V needs as a TUNERGUARD_OPTIONS value: "" when none (no ':',
 * whitespace or leading quote), else a quote kind it does not hold; NULL
 * when it needs one and holds both. */
static const char *option_quote(const char *v)
{
    if (!strpbrk(v, ": \t\n\r") && v[0] != '\'' && v[0] != '"')
        return "";
    return !strchr(v, '\'') ? "'" : !strchr(v, '"') ? "\"" : NULL;
}

/* P made absolute against CWD ("" : P as it is). */
static void absolute(const char *cwd, const char *p, char *out, size_t n)
{
    if (p[0] == '/' || !cwd[0])
        snprintf(out, n, "%s", p);
    else
        snprintf(out, n, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", p);
}

/* run's flags, up to the program. */
struct run_args {
    const char *mode, *report_dir;
    int stress, trace;
    struct cli_buf extra; /* ":K=V" per --option */
    int prog;             /* argv index of the program */
};

/* Parse run's flags into *ra.  -1 on success; else the exit status to
 * return (help printed, or a usage error said). */
static int parse_run_args(int argc, char **argv, struct run_args *ra)
{
    const char *mode = NULL, *report_dir = NULL;
    int stress = 0, trace = 0;
    struct cli_buf extra = {0};
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (cli_is_help(a))
            return cli_help("run");
        if (strcmp(a, "--detect") == 0 || strcmp(a, "--serialize") == 0 || strcmp(a, "--off") == 0) {
            if (mode && strcmp(mode, a + 2) != 0)
                return cli_usage("run", "%s conflicts with mode %s given before", a, mode);
            mode = a + 2;
        } else if (strcmp(a, "--stress") == 0) {
            stress = 1;
        } else if (strcmp(a, "--trace") == 0) {
            trace = 1;
        } else if (strcmp(a, "--report-dir") == 0 || strncmp(a, "--report-dir=", 13) == 0) {
            report_dir = a[12] == '=' ? a + 13 : (i + 1 < argc ? argv[++i] : NULL);
            if (!report_dir || !*report_dir || (a[12] != '=' && strcmp(report_dir, "--") == 0))
                return cli_usage("run", "--report-dir needs a directory");
        } else if (strcmp(a, "--option") == 0 || strncmp(a, "--option=", 9) == 0) {
            const char *kv = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!kv || !strchr(kv, '=') || kv[0] == '=')
                return cli_usage("run", "--option needs KEY=VALUE");
            if (strncmp(kv, "mode=", 5) == 0) { /* one mode, however it is given */
                if (mode && strcmp(mode, kv + 5) != 0)
                    return cli_usage("run", "--option %s conflicts with --%s", kv, mode);
                mode = kv + 5;
                continue;
            }
            cli_buf_printf(&extra, ":%s", kv);
        } else if (a[0] == '-') {
            return cli_usage("run", "unknown flag '%s'", a);
        } else {
            break; /* the program, without a "--" before it */
        }
    }
    if (i >= argc)
        return cli_usage("run", "no program given");
    *ra = (struct run_args){.mode = mode, .report_dir = report_dir, .stress = stress, .trace = trace,
                            .extra = extra, .prog = i};
    return -1;
}

int cli_run(int argc, char **argv)
{
    struct run_args ra = {0};
    int done = parse_run_args(argc, argv, &ra);
    if (done >= 0)
        return done;
    const char *mode = ra.mode, *report_dir = ra.report_dir;
    int stress = ra.stress, trace = ra.trace;
    struct cli_buf extra = ra.extra;
    int i = ra.prog;

    char lib[4096];
    if (cli_find_lib(lib, sizeof lib) < 0) {
        fprintf(stderr, "tunerguard: cannot find libtunerguard.so (looked at %s); set TUNERGUARD_LIB\n", lib);
        return CLI_EXIT_USAGE;
    }

    struct cli_buf opts = {0};
    const char *old = getenv("TUNERGUARD_OPTIONS");
    if (old && *old)
        cli_buf_puts(&opts, old);
    if (mode)
        cli_buf_printf(&opts, ":mode=%s", mode);
    if (stress)
        cli_buf_puts(&opts, ":stress=1");
    if (trace)
        cli_buf_puts(&opts, ":trace=1");
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0'; /* unreachable: paths stay as given */
    if (report_dir) {
        char abs_dir[2 * PATH_MAX];
        absolute(cwd, report_dir, abs_dir, sizeof abs_dir);
        const char *quote = option_quote(abs_dir);
        if (!quote) {
            cli_errf("run: --report-dir %s holds both ' and \" as well as ':' or a space; TUNERGUARD_OPTIONS cannot "
                     "quote it, choose another directory", abs_dir);
            goto usage;
        }
        struct stat sb;
        if (stat(report_dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
            cli_errf("run: --report-dir %s exists and is not a directory", report_dir);
            goto usage;
        }
        if (cli_mkdirs(report_dir) < 0) {
            cli_errf("run: cannot create report dir %s: %s", report_dir, strerror(errno));
            goto usage;
        }
        cli_buf_printf(&opts, ":log_path=%s%s/tunerguard%s", quote, abs_dir, quote);
    }
    if (extra.len)
        cli_buf_puts(&opts, extra.s);
    cli_buf_free(&extra);
    /* The prefix in force (as the library's parser reads the whole string),
     * made absolute: a child that changes directory still writes where this
     * run looks, and the listing names real paths. */
    char log_path[2 * PATH_MAX];
    cli_option_value(opts.s ? opts.s : "", "log_path", log_path, sizeof log_path);
    int known = log_path[0] != '\0'; /* "": the library will refuse the options and say why */
    if (known && strcmp(log_path, "stderr") != 0 && log_path[0] != '/' && cwd[0]) {
        char abs_path[2 * PATH_MAX];
        absolute(cwd, log_path, abs_path, sizeof abs_path);
        const char *quote = option_quote(abs_path);
        if (!quote) {
            cli_errf("run: log_path made absolute, %s, holds both ' and \" as well as ':' or a space; "
                     "TUNERGUARD_OPTIONS cannot quote it, run from another directory or give --report-dir", abs_path);
            goto usage;
        }
        cli_buf_printf(&opts, ":log_path=%s%s%s", quote, abs_path, quote);
        snprintf(log_path, sizeof log_path, "%s", abs_path);
    }
    const char *optstr = opts.s ? (opts.s[0] == ':' ? opts.s + 1 : opts.s) : "";

    struct cli_buf pre = {0};
    cli_buf_puts(&pre, lib);
    const char *old_pre = getenv("LD_PRELOAD");
    if (old_pre && *old_pre)
        cli_buf_printf(&pre, ":%s", old_pre);

    struct snap before = {0};
    if (known && strcmp(log_path, "stderr") != 0) {
        char dir[PATH_MAX];
        const char *slash = strrchr(log_path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - log_path) : 1, slash ? log_path : ".");
        take_snapshot(dir[0] ? dir : "/", slash ? slash + 1 : log_path, &before);
    }

    setenv("LD_PRELOAD", pre.s, 1);
    if (*optstr)
        setenv("TUNERGUARD_OPTIONS", optstr, 1);
    cli_buf_free(&pre);

    /* Like a shell: the terminal's SIGINT/SIGQUIT reach the child directly;
     * SIGTERM/SIGHUP sent to us are forwarded. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward}, oint, oquit;
    sigaction(SIGINT, &ign, &oint);
    sigaction(SIGQUIT, &ign, &oquit);
    sigaction(SIGTERM, &fwd, NULL);
    sigaction(SIGHUP, &fwd, NULL);

    pid_t pid = fork();
    if (pid < 0) {
        perror("tunerguard: fork");
        return 1;
    }
    if (pid == 0) {
        sigaction(SIGINT, &oint, NULL);
        sigaction(SIGQUIT, &oquit, NULL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        execvp(argv[i], argv + i);
        int e = errno;
        fprintf(stderr, "tunerguard: cannot run %s: %s\n", argv[i], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            perror("tunerguard: waitpid");
            return 1;
        }
    }
    int rc = cli_exit_status(st);
    if (known)
        print_reports(log_path, &before);
    free_snapshot(&before);
    cli_buf_free(&opts);
    return rc;
usage:
    cli_buf_free(&extra);
    cli_buf_free(&opts);
    return CLI_EXIT_USAGE;
}
