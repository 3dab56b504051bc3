/* See suppress_load.h. */
#include "reports/suppress_load.h"
#include "detectors/suppress.h"
#include "core/log.h"
#include "core/process.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TG_SUPP_FILE_MAX (1 << 20)

static struct tg_supp_set tg__supp;
static unsigned long long tg__supp_total;

int tg_supp_load(const char *path, char *err, size_t errlen)
{
    const char *kind;
    int fd = tg_proc_open_read(path, &kind); /* a FIFO there must not block the process */
    if (fd == -2) {
        snprintf(err, errlen, "suppressions file '%s': not a regular file (%s)", path, kind);
        return -1;
    }
    if (fd < 0) {
        int e = errno;
        /* A relative path is looked up in this process's own directory.  A
         * child started elsewhere (subprocess.run(cwd=...), a spawn worker
         * after os.chdir) inherits TUNERGUARD_OPTIONS but not the directory
         * it was written for, and tunerguard never rewrites the environment
         * for its children.  Nothing tells the process the user started from
         * its children, so a relative path that does not resolve here
         * (ENOENT, ENOTDIR) is a warning in every process: it runs without
         * suppressions.  Any other failure, and any failure of an absolute
         * path, stops the process as before. */
        if (path[0] != '/' && (e == ENOENT || e == ENOTDIR)) {
            char cwd[512];
            if (!getcwd(cwd, sizeof cwd))
                snprintf(cwd, sizeof cwd, "?");
            snprintf(err, errlen,
                     "suppressions file '%s': cannot read (%s) from %s; pid %ld runs without suppressions "
                     "(a relative path is resolved in each process's directory: use an absolute path)",
                     path, strerror(e), cwd, (long)getpid());
            tg__warn("%s", err);
            return 1;
        }
        snprintf(err, errlen, "suppressions file '%s': cannot read (%s)", path, strerror(e));
        return -1;
    }
    char *buf = malloc(TG_SUPP_FILE_MAX + 1);
    size_t len = 0;
    int rc = 0;
    if (!buf) {
        snprintf(err, errlen, "suppressions file '%s': out of memory", path);
        close(fd);
        return -1;
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, TG_SUPP_FILE_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "suppressions file '%s': cannot read (%s)", path, strerror(errno));
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > TG_SUPP_FILE_MAX) {
            snprintf(err, errlen, "suppressions file '%s': larger than %d bytes", path, TG_SUPP_FILE_MAX);
            rc = -1;
            break;
        }
    }
    close(fd);
    if (rc == 0) {
        char why[300];
        if (tg_supp_parse(&tg__supp, buf, len, why, sizeof why) < 0) {
            snprintf(err, errlen, "suppressions file '%s'%s%s", path, strncmp(why, "line ", 5) == 0 ? " " : ": ",
                     why);
            rc = -1;
        }
    }
    free(buf);
    return rc;
}

int tg_supp_check_ref(const struct tg_report *r)
{
    if (tg__supp.n == 0)
        return 0;
    const struct tg_supp *s = tg_supp_match_report(&tg__supp, r);
    if (!s)
        return 0;
    __atomic_fetch_add(&tg__supp_total, 1, __ATOMIC_RELAXED); /* interference reports may come without the GIL */
    return (int)(s - tg__supp.s) + 1;
}

int tg_supp_check(const struct tg_report *r)
{
    return tg_supp_check_ref(r) != 0;
}

void tg_supp_count_again(int ref)
{
    if (ref < 1 || ref > tg__supp.n)
        return;
    tg__supp.s[ref - 1].hits++;
    __atomic_fetch_add(&tg__supp_total, 1, __ATOMIC_RELAXED);
}

unsigned long long tg_supp_total(void)
{
    return tg__supp_total;
}

void tg_supp_exit_report(int verbosity)
{
    if (verbosity < 1 || tg__supp_total == 0)
        return;
    int matched = 0;
    for (int i = 0; i < tg__supp.n; i++)
        matched += tg__supp.s[i].hits > 0;
    tg__warn("matched %d suppression%s (pid=%ld):", matched, matched == 1 ? "" : "s", (long)getpid());
    for (int i = 0; i < tg__supp.n; i++)
        if (tg__supp.s[i].hits)
            tg__warn("%6llu %s:%s (line %d)", (unsigned long long)tg__supp.s[i].hits, tg__supp.s[i].type,
                     tg__supp.s[i].pattern, tg__supp.s[i].line);
}
