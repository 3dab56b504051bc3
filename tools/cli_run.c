/* tunerguard run: run a program with libtunerguard.so preloaded.
 *
 * Contract: LD_PRELOAD becomes "<lib>[:<preloads already set>]" (never
 * dropping what was there); TUNERGUARD_OPTIONS becomes "<already set>:<ours>"
 * (the library's parser lets a later key win, so ours win; a --report-dir
 * holding ':' or whitespace goes in quoted, log_path='DIR/tunerguard'); the program's exit
 * status is passed through (128+N for signal N, 127/126 when it cannot be
 * executed); afterwards one stderr line per report file the run created or
 * changed under the effective log_path prefix, or "no reports". */
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
        fprintf(stderr, "tunerguard: report: %s%s/%s\n", (dir[0] == '/' || dir[0] == '.') ? "" : "./", dir,
                after.e[i].name);
        shown++;
    }
    if (shown) {
        char word[2 * PATH_MAX];
        shell_word(dir, word, sizeof word);
        fprintf(stderr, "tunerguard: summarize with: tunerguard report %s\n", word);
    }
    else
        fprintf(stderr, "tunerguard: no reports (%s.<pid>.*)\n", log_path);
    free_snapshot(&after);
}

int cli_run(int argc, char **argv)
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
                return cli_usage("run", "%s conflicts with --%s", a, mode);
            mode = a + 2;
        } else if (strcmp(a, "--stress") == 0) {
            stress = 1;
        } else if (strcmp(a, "--trace") == 0) {
            trace = 1;
        } else if (strcmp(a, "--report-dir") == 0 || strncmp(a, "--report-dir=", 13) == 0) {
            report_dir = a[12] == '=' ? a + 13 : (i + 1 < argc ? argv[++i] : NULL);
            if (!report_dir || !*report_dir)
                return cli_usage("run", "--report-dir needs a directory");
        } else if (strcmp(a, "--option") == 0 || strncmp(a, "--option=", 9) == 0) {
            const char *kv = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!kv || !strchr(kv, '=') || kv[0] == '=')
                return cli_usage("run", "--option needs KEY=VALUE");
            cli_buf_printf(&extra, ":%s", kv);
        } else if (a[0] == '-') {
            return cli_usage("run", "unknown flag '%s'", a);
        } else {
            break; /* the program, without a "--" before it */
        }
    }
    if (i >= argc)
        return cli_usage("run", "no program given");

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
    if (report_dir) {
        /* A value holding ':' or whitespace, or beginning with a quote, is
         * quoted for the library's parser with a quote it does not hold. */
        const char *quote = "";
        if (strpbrk(report_dir, ": \t\n\r") || report_dir[0] == '\'' || report_dir[0] == '"') {
            if (!strchr(report_dir, '\''))
                quote = "'";
            else if (!strchr(report_dir, '"'))
                quote = "\"";
            else {
                fprintf(stderr,
                        "tunerguard: run: --report-dir %s holds both ' and \" as well as ':' or a space; "
                        "TUNERGUARD_OPTIONS cannot quote it, choose another directory\n",
                        report_dir);
                cli_buf_free(&extra);
                cli_buf_free(&opts);
                return CLI_EXIT_USAGE;
            }
        }
        if (cli_mkdirs(report_dir) < 0) {
            fprintf(stderr, "tunerguard: cannot create report dir %s: %s\n", report_dir, strerror(errno));
            return 1;
        }
        cli_buf_printf(&opts, ":log_path=%s%s/tunerguard%s", quote, report_dir, quote);
    }
    if (extra.len)
        cli_buf_puts(&opts, extra.s);
    cli_buf_free(&extra);
    const char *optstr = opts.s ? (opts.s[0] == ':' ? opts.s + 1 : opts.s) : "";

    struct cli_buf pre = {0};
    cli_buf_puts(&pre, lib);
    const char *old_pre = getenv("LD_PRELOAD");
    if (old_pre && *old_pre)
        cli_buf_printf(&pre, ":%s", old_pre);

    char log_path[PATH_MAX];
    cli_option_value(optstr, "log_path", log_path, sizeof log_path);
    if (!log_path[0])
        strcpy(log_path, "tunerguard");
    struct snap before = {0};
    if (strcmp(log_path, "stderr") != 0) {
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
    print_reports(log_path, &before);
    free_snapshot(&before);
    cli_buf_free(&opts);
    return rc;
}
