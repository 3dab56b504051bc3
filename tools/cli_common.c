/* Shared helpers of the tunerguard command: where the library and the source
 * tree are, running children with captured output, small buffers. */
#include "cli.h"

#include "core/options.h"
#include "core/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TG_SOURCE_DIR
#define TG_SOURCE_DIR ""
#endif
#ifndef TG_FAKECUDA_DIR
#define TG_FAKECUDA_DIR ""
#endif
#ifndef TG_INSTALL_LIBDIR
#define TG_INSTALL_LIBDIR "lib"
#endif

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *cli_self_dir(void)
{
    static char dir[PATH_MAX];
    if (dir[0])
        return dir;
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) {
        strcpy(dir, ".");
        return dir;
    }
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
    return dir;
}

int cli_find_lib(char *out, size_t n)
{
    const char *env = getenv("TUNERGUARD_LIB");
    if (env && *env) {
        char real[PATH_MAX];
        if (is_file(env) && realpath(env, real)) {
            snprintf(out, n, "%s", real);
            return 0;
        }
        snprintf(out, n, "$TUNERGUARD_LIB=%s (not a file)", env);
        return -1;
    }
    const char *rel[] = {"", "/../lib", "/../lib/x86_64-linux-gnu", "/../lib64", "/../" TG_INSTALL_LIBDIR};
    const char *self = cli_self_dir();
    char looked[2048] = "";
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX], real[PATH_MAX];
        snprintf(cand, sizeof cand, "%s%s/libtunerguard.so", self, rel[i]);
        if (is_file(cand) && realpath(cand, real)) {
            snprintf(out, n, "%s", real);
            return 0;
        }
        size_t l = strlen(looked);
        snprintf(looked + l, sizeof looked - l, "%s%s", l ? ", " : "", cand);
    }
    snprintf(out, n, "%s", looked);
    return -1;
}

const char *cli_source_dir(void)
{
    const char *env = getenv("TUNERGUARD_SOURCE_DIR");
    if (env && *env)
        return is_dir(env) ? env : NULL;
    return TG_SOURCE_DIR[0] && is_dir(TG_SOURCE_DIR) ? TG_SOURCE_DIR : NULL;
}

const char *cli_fakecuda_dir(void)
{
    static char dir[PATH_MAX];
    char cand[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/tests/fakecuda", cli_self_dir());
    snprintf(cand, sizeof cand, "%s/libcuda.so.1", dir);
    if (is_file(cand))
        return dir;
    snprintf(cand, sizeof cand, "%s/libcuda.so.1", TG_FAKECUDA_DIR);
    if (TG_FAKECUDA_DIR[0] && is_file(cand))
        return TG_FAKECUDA_DIR;
    return NULL;
}

int cli_exit_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cli_capture_run(char *const argv[], const struct cli_env *env, size_t nenv, const char *cwd, double timeout_s,
                    struct cli_capture *cap)
{
    memset(cap, 0, sizeof *cap);
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) < 0)
        return -1;
    if (pipe2(pe, O_CLOEXEC) < 0) {
        close(po[0]);
        close(po[1]);
        return -1;
    }
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        for (size_t i = 0; i < nenv; i++) {
            if (env[i].value)
                setenv(env[i].name, env[i].value, 1);
            else
                unsetenv(env[i].name);
        }
        if (cwd && chdir(cwd) < 0) {
            dprintf(2, "tunerguard: cannot enter %s: %s\n", cwd, strerror(errno));
            _exit(127);
        }
        execvp(argv[0], argv);
        dprintf(2, "tunerguard: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    struct cli_buf out = {0}, err = {0};
    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    int open_fds = 2;
    while (open_fds > 0) {
        int wait_ms = -1;
        if (timeout_s > 0) {
            double left = timeout_s - (now_s() - t0);
            if (left <= 0) {
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                cap->timed_out = 1;
                break;
            }
            wait_ms = (int)(left * 1000) + 1;
        }
        int r = poll(fds, 2, wait_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char tmp[8192];
            ssize_t k = read(fds[i].fd, tmp, sizeof tmp);
            if (k > 0) {
                cli_buf_add(i == 0 ? &out : &err, tmp, (size_t)k);
            } else if (k == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    cap->seconds = now_s() - t0;
    cli_buf_add(&out, "", 0);
    cli_buf_add(&err, "", 0);
    cap->out = out.s;
    cap->err = err.s;
    cap->status = st;
    return 0;
}

void cli_capture_free(struct cli_capture *cap)
{
    free(cap->out);
    free(cap->err);
    cap->out = cap->err = NULL;
}

void cli_buf_add(struct cli_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            fputs("tunerguard: out of memory\n", stderr);
            exit(1);
        }
        b->s = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void cli_buf_puts(struct cli_buf *b, const char *s)
{
    cli_buf_add(b, s, strlen(s));
}

void cli_buf_printf(struct cli_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[512];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        cli_buf_add(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cli_buf_add(b, big, (size_t)n);
    free(big);
}

void cli_buf_free(struct cli_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

int cli_read_fd(int fd, struct cli_buf *b)
{
    char tmp[65536];
    for (;;) {
        ssize_t k = read(fd, tmp, sizeof tmp);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        cli_buf_add(b, tmp, (size_t)k);
    }
    cli_buf_add(b, "", 0);
    return 0;
}

char *cli_read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct cli_buf b = {0};
    int rc = cli_read_fd(fd, &b);
    close(fd);
    if (rc < 0) {
        cli_buf_free(&b);
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.s;
}

int cli_mkdirs(const char *path)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
        errno = ENAMETOOLONG; /* never a shorter folder than the one asked for */
        return -1;
    }
    for (char *s = p + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0777) < 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    }
    if (mkdir(p, 0777) < 0 && errno != EEXIST)
        return -1;
    return is_dir(p) ? 0 : -1;
}

/* ---- TUNERGUARD_OPTIONS ---------------------------------------------------- */

/* The library's own parser (core/options.c, pure: no I/O, no environment),
 * so the command reads an options string exactly as the library will. */
void cli_option_value(const char *opts, const char *name, char *out, size_t n)
{
    struct tg_options o;
    char err[1024];
    out[0] = '\0';
    if (tg_options_parse(opts, &o, err, sizeof err) < 0)
        return; /* the library refuses the whole string: no value is in force */
    const char *v = NULL;
#define CLI_STRING_OPT(opt) \
    if (!strcmp(name, #opt))  \
        v = o.opt;
#define CLI_OPT_MODE(opt)
#define CLI_OPT_DEADLOCK(opt)
#define CLI_OPT_WAITEND(opt)
#define CLI_OPT_BOOL(opt)
#define CLI_OPT_STRING(opt) CLI_STRING_OPT(opt)
#define CLI_OPT_INT(lo, hi) CLI_OPT_BOOL
#define TG_OPTION(opt, type, def, help) CLI_OPT_##type(opt)
#include "core/options.inc"
#undef TG_OPTION
    snprintf(out, n, "%s", v ? v : "");
    tg_options_free(&o);
}

/* ---- error lines ------------------------------------------------------------ */

/* Length of the UTF-8 sequence at S (N bytes left, S[0] >= 0x80) when it is
 * a printable character, else 0.  Stricter than the check alone on purpose:
 * a C1 control (U+0080 to U+009F) is well formed, but a terminal may take
 * it for an escape, so an error line escapes it as it does C0 controls. */
static size_t printable_utf8(const unsigned char *s, size_t n)
{
    size_t k = tg_utf8_len(s, n);
    return k == 2 && s[0] == 0xc2 && s[1] < 0xa0 ? 0 : k;
}

void cli_buf_put_esc(struct cli_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k;
        if (u[i] == '\\') {
            cli_buf_puts(b, "\\\\");
            i++;
        } else if (u[i] >= 0x20 && u[i] < 0x7f) {
            cli_buf_add(b, s + i, 1);
            i++;
        } else if (u[i] >= 0x80 && (k = printable_utf8(u + i, n - i))) {
            cli_buf_add(b, s + i, k);
            i += k;
        } else {
            cli_buf_printf(b, "\\x%02x", u[i]);
            i++;
        }
    }
}

void cli_errf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[1024];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *text = small;
    if ((size_t)n >= sizeof small && (text = malloc((size_t)n + 1))) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    } else if (!text) {
        text = small;
        n = (int)sizeof small - 1;
    }
    struct cli_buf b = {0};
    cli_buf_puts(&b, "tunerguard: ");
    cli_buf_put_esc(&b, text, (size_t)n);
    cli_buf_puts(&b, "\n");
    fputs(b.s, stderr);
    cli_buf_free(&b);
    if (text != small)
        free(text);
}
