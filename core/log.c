/* One-line diagnostics on stderr.  See log.h. */
#include "core/log.h"
#include "core/options.h"
#include "core/startup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Set once by the constructor (tg_log_note_start), read after. */
static int stderr_closed;          /* fd 2 was not open when the process started */
static int stderr_moved;           /* log_path=stderr moved to the default files */

TG_STARTUP void tg_log_note_start(void)
{
    int saved = errno;
    stderr_closed = fcntl(2, F_GETFD) < 0 && errno == EBADF; /* a look only: no read, no write */
    errno = saved;
}

int tg_log_stderr_ok(void)
{
    return !stderr_closed;
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
    if (stderr_closed)
        return;                      /* fd 2 is the program's own file */
    int saved = errno;               /* never disturb the host's errno */
    int m = vsnprintf(raw, sizeof raw, fmt, ap);
    size_t rlen = m < 0 ? 0 : (size_t)m < sizeof raw ? (size_t)m : sizeof raw - 1;
    size_t len = (size_t)snprintf(buf, sizeof buf, "tunerguard: ");
    tg_options_escape(raw, rlen, buf + len, sizeof buf - len - 1); /* control bytes as \xNN */
    len += strlen(buf + len);
    buf[len++] = '\n';
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(2, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        len -= (size_t)w;
    }
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
