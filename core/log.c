/* One-line diagnostics on stderr.  See log.h. */
#include "core/log.h"
#include "core/options.h"
#include "core/startup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* Set once by the constructor (tg_log_note_start), read after. */
static int stderr_closed;          /* fd 2 was not open when the process started */
static int stderr_known;           /* its identity was read: */
static dev_t stderr_dev;
static ino_t stderr_ino;
static int stderr_moved;           /* log_path=stderr moved to the default files */
static int stderr_stuck;           /* a write to fd 2 waited its limit: later ones do not wait */

TG_STARTUP void tg_log_note_start(void)
{
    int saved = errno;
    stderr_closed = fcntl(2, F_GETFD) < 0 && errno == EBADF; /* a look only: no read, no write */
    struct stat st;
    if (!stderr_closed && fstat(2, &st) == 0) {
        stderr_known = 1;
        stderr_dev = st.st_dev;
        stderr_ino = st.st_ino;
    }
    errno = saved;
}

int tg_log_stderr_ok(void)
{
    if (stderr_closed)
        return 0;
    int saved = errno;
    struct stat st;
    int ok = fstat(2, &st) == 0;
    if (ok && !(stderr_known && st.st_dev == stderr_dev && st.st_ino == stderr_ino)) {
        /* Not the file the process started with: the program put another
         * there.  A terminal, /dev/null, a pipe (a capture: a notebook's, a
         * pager), a log opened for appending or a file with no name (a test
         * runner's capture: pytest's is an unlinked temporary file) is a
         * stderr; a file written from its start, a socket or a device that
         * took the free number is the program's. */
        int fl = fcntl(2, F_GETFL);
        ok = (S_ISCHR(st.st_mode) && (st.st_rdev == makedev(1, 3) || isatty(2))) || S_ISFIFO(st.st_mode) ||
             (S_ISREG(st.st_mode) && (st.st_nlink == 0 || (fl >= 0 && (fl & O_APPEND))));
    }
    errno = saved;
    return ok;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait up to ms in all for fd 2 to take a write, signals that interrupt
 * the wait included (no wait once one timed out). */
static int stderr_ready(int ms)
{
    struct pollfd pfd = {.fd = 2, .events = POLLOUT};
    const int64_t end = mono_ms() + (stderr_stuck ? 0 : ms);
    for (;;) {
        int64_t left = end - mono_ms();
        int n = poll(&pfd, 1, left > 0 ? (int)left : 0);
        if (n < 0 && errno == EINTR && left > 0)
            continue;
        if (n <= 0)
            stderr_stuck = 1;
        return n > 0 && !(pfd.revents & (POLLERR | POLLNVAL));
    }
}

int tg_log_write_stderr(const char *p, size_t len)
{
    int saved = errno, rc = 0;
    /* A reader that is gone: EPIPE, never SIGPIPE's default (death) nor the
     * program's handler.  SIGPIPE held off on this thread for the writes;
     * one they raised, not pending before, is taken back. */
    struct sigaction sa;
    sigset_t pipe_set, old, pending;
    int hold = sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler != SIG_IGN;
    int was_pending = 0;
    if (hold) {
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
        hold = pthread_sigmask(SIG_BLOCK, &pipe_set, &old) == 0;
    }
    int broken = 0;
    while (len > 0) {
        /* A pipe nobody reads: at most a second's wait, in pieces a pipe
         * with room takes whole. */
        if (!stderr_ready(1000)) {
            rc = -1;
            break;
        }
        size_t k = len < PIPE_BUF ? len : PIPE_BUF;
        ssize_t w = write(2, p, k);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            broken = w < 0 && errno == EPIPE;
            rc = -1;
            break;
        }
        p += w;
        len -= (size_t)w;
    }
    if (rc == 0)
        stderr_stuck = 0; /* it drains again (a pager's reader caught up) */
    if (hold) {
        if (broken && !was_pending) {
            const struct timespec none = {0, 0};
            while (sigtimedwait(&pipe_set, NULL, &none) < 0 && errno == EINTR) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    errno = saved;
    return rc;
}

void tg_log_note_moved(void)
{
    stderr_moved = 1;
}

int tg_log_stderr_moved(void)
{
    return stderr_moved;
}

/* One line, whatever the text holds: each control byte of the formatted
 * message (a newline or an ESC in a path, an option value, a suppressions
 * line, a name from the program) is written as \xNN, so the line can
 * neither be split in two nor drive the terminal. */
static void vline(const char *fmt, va_list ap)
{
    char raw[1024], buf[1280];
    int saved = errno;               /* never disturb the host's errno */
    if (!tg_log_stderr_ok()) {
        errno = saved;
        return;                      /* fd 2 is the program's own file */
    }
    int m = vsnprintf(raw, sizeof raw, fmt, ap);
    size_t rlen = m < 0 ? 0 : (size_t)m < sizeof raw ? (size_t)m : sizeof raw - 1;
    size_t len = (size_t)snprintf(buf, sizeof buf, "tunerguard: ");
    tg_options_escape(raw, rlen, buf + len, sizeof buf - len - 1); /* control bytes as \xNN */
    len += strlen(buf + len);
    buf[len++] = '\n';
    (void)tg_log_write_stderr(buf, len);
    errno = saved;
}

void tg__warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(fmt, ap);
    va_end(ap);
}

void tg__info(int level, const char *fmt, ...)
{
    if (tg_opts.verbosity < level)
        return;
    va_list ap;
    va_start(ap, fmt);
    vline(fmt, ap);
    va_end(ap);
}

int tg__say_capped(unsigned *said, unsigned cap, int level, const char *fmt, ...)
{
    /* counted first, printed or not: a later call never says what an
     * earlier one at a lower verbosity kept back */
    if (__atomic_load_n(said, __ATOMIC_RELAXED) >= cap || __atomic_fetch_add(said, 1, __ATOMIC_RELAXED) >= cap)
        return 0;
    if (tg_opts.verbosity < level)
        return 1;
    va_list ap;
    va_start(ap, fmt);
    vline(fmt, ap);
    va_end(ap);
    return 1;
}
