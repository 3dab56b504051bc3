/* The runner of the Criterion stand-in (criterion/criterion.h): each test in
 * a forked child, in link order; a summary line; exit 1 if any failed. */
#include "criterion/criterion.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern const struct tg_crt_test *const __start_tg_crt_tests[], *const __stop_tg_crt_tests[];
extern const struct tg_crt_suite *const __start_tg_crt_suites[] __attribute__((weak));
extern const struct tg_crt_suite *const __stop_tg_crt_suites[] __attribute__((weak));

void tg_crt_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    char msg[1024] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *m = msg[0] == ' ' ? msg + 1 : msg; /* the macro prefixes " " to the format */
    fprintf(stderr, "%s:%d: assertion failed: %s%s%s\n", file, line, expr, m[0] ? ": " : "", m);
    fflush(NULL);
    _exit(1);
}

void tg_crt_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[info] ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static const struct tg_crt_opts *suite_opts(const char *suite)
{
    if (!__start_tg_crt_suites)
        return NULL;
    for (const struct tg_crt_suite *const *s = __start_tg_crt_suites; s < __stop_tg_crt_suites; s++)
        if (strcmp((*s)->name, suite) == 0)
            return &(*s)->opts;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL; /* substring of suite/name; other args ignored */
    if (filter && filter[0] == '-')
        filter = NULL;
    int run = 0, failed = 0;
    for (const struct tg_crt_test *const *p = __start_tg_crt_tests; p < __stop_tg_crt_tests; p++) {
        const struct tg_crt_test *t = *p;
        char full[256];
        snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
        if (filter && !strstr(full, filter))
            continue;
        const struct tg_crt_opts *so = suite_opts(t->suite);
        void (*init)(void) = t->opts.init ? t->opts.init : so ? so->init : NULL;
        void (*fini)(void) = t->opts.fini ? t->opts.fini : so ? so->fini : NULL;
        double timeout = t->opts.timeout > 0 ? t->opts.timeout : so && so->timeout > 0 ? so->timeout : 120;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            alarm((unsigned)timeout + 1);
            if (init)
                init();
            t->fn();
            if (fini)
                fini();
            fflush(NULL);
            exit(0); /* exit, not _exit: TSan reports at exit too */
        }
        int st = 0;
        waitpid(pid, &st, 0);
        run++;
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok) {
            failed++;
            if (WIFSIGNALED(st))
                fprintf(stderr, "[FAIL] %s: signal %d%s\n", full, WTERMSIG(st),
                        WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
            else
                fprintf(stderr, "[FAIL] %s: exit status %d%s\n", full, WEXITSTATUS(st),
                        WEXITSTATUS(st) == 66 ? " (ThreadSanitizer report)" : "");
        }
    }
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d\n", run, run - failed, failed);
    return failed ? 1 : 0;
}
