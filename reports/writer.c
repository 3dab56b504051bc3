/* See writer.h.  Async-signal-safe: write(2) and hand formatting only;
 * fd 2 through core/log.c's tg_log_write_stderr (poll, SIGPIPE held off). */
#include "reports/writer.h"
#include "core/log.h"
#include "core/utf8.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void tg_w_init(struct tg_w *w, int fd)
{
    w->fd = fd;
    w->failed = 0;
    w->len = 0;
}

int tg_w_flush(struct tg_w *w)
{
    int saved = errno, err = 0;
    const char *p = w->buf;
    size_t left = w->len;
    if (w->fd == 2 && left > 0 && !w->failed && tg_log_write_stderr(p, left) < 0) {
        err = EIO;                 /* stuck or gone: core/log.c never blocks long there */
        w->failed = 1;
    }
    if (w->fd == 2)
        left = 0;
    while (left > 0 && !w->failed) {
        ssize_t n = write(w->fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {              /* error, or a 0-byte write: give up */
            err = n < 0 ? errno : EIO;
            w->failed = 1;
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    w->len = 0;
    errno = err ? err : saved;
    return w->failed ? -1 : 0;
}

static void put(struct tg_w *w, const char *s, size_t n)
{
    while (n > 0) {
        if (w->failed)
            return;
        if (w->len == sizeof w->buf)
            tg_w_flush(w);
        size_t room = sizeof w->buf - w->len;
        size_t k = n < room ? n : room;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

void tg_w_char(struct tg_w *w, char c)
{
    put(w, &c, 1);
}

void tg_w_str(struct tg_w *w, const char *s)
{
    if (!s)
        s = "(null)";
    put(w, s, strlen(s));
}

void tg_w_strn(struct tg_w *w, const char *s, size_t max)
{
    if (!s) {
        tg_w_str(w, NULL);
        return;
    }
    put(w, s, strnlen(s, max));
}

void tg_w_text(struct tg_w *w, const char *s, size_t max)
{
    if (!s) {
        tg_w_str(w, NULL);
        return;
    }
    static const char hexd[] = "0123456789abcdef";
    size_t n = strnlen(s, max), from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            size_t k = tg_utf8_len((const unsigned char *)s + i, n - i);
            if (k) { /* a whole character */
                i += k - 1;
                continue;
            }
        } else if (c >= 0x20 && c != 0x7f && c != '\\') {
            continue;
        }
        put(w, s + from, i - from);
        from = i + 1;
        char e[4] = {'\\', 'x', hexd[c >> 4], hexd[c & 15]};
        if (c == '\n' || c == '\t' || c == '\r' || c == '\\') {
            e[1] = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : '\\';
            put(w, e, 2);
        } else {
            put(w, e, 4);
        }
    }
    put(w, s + from, n - from);
}

void tg_w_u64(struct tg_w *w, uint64_t v)
{
    char tmp[24];
    int i = (int)sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(w, tmp + i, sizeof tmp - (size_t)i);
}

void tg_w_i64(struct tg_w *w, int64_t v)
{
    if (v < 0) {
        tg_w_char(w, '-');
        tg_w_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        tg_w_u64(w, (uint64_t)v);
    }
}

void tg_w_hex(struct tg_w *w, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[18];
    int i = (int)sizeof tmp;
    do {
        tmp[--i] = digits[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    put(w, tmp + i, sizeof tmp - (size_t)i);
}

void tg_w_duration(struct tg_w *w, uint64_t ns)
{
    static const struct { uint64_t div; const char *unit; } units[] = {
        {1000000000ull, " s"}, {1000000ull, " ms"}, {1000ull, " us"},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (ns >= units[i].div) {
            /* round to one decimal */
            uint64_t tenths = (ns * 10 + units[i].div / 2) / units[i].div;
            if (ns > UINT64_MAX / 10)
                tenths = ns / (units[i].div / 10);
            tg_w_u64(w, tenths / 10);
            tg_w_char(w, '.');
            tg_w_char(w, (char)('0' + tenths % 10));
            tg_w_str(w, units[i].unit);
            return;
        }
    }
    tg_w_u64(w, ns);
    tg_w_str(w, " ns");
}

void tg_w_json_str(struct tg_w *w, const char *s, size_t max)
{
    static const char digits[] = "0123456789abcdef";
    if (!s) {
        tg_w_str(w, "null");
        return;
    }
    size_t n = strnlen(s, max);
    const unsigned char *p = (const unsigned char *)s;
    tg_w_char(w, '"');
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(w, esc, 2);
            i++;
        } else if (c == '\n') {
            tg_w_str(w, "\\n");
            i++;
        } else if (c == '\t') {
            tg_w_str(w, "\\t");
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            char esc[6] = {'\\', 'u', '0', '0', digits[c >> 4], digits[c & 15]};
            put(w, esc, 6);
            i++;
        } else if (c < 0x80) {
            size_t j = i;           /* a run of plain ASCII in one copy */
            while (j < n && p[j] >= 0x20 && p[j] < 0x7f && p[j] != '"' && p[j] != '\\')
                j++;
            put(w, s + i, j - i);
            i = j;
        } else {
            size_t k = tg_utf8_len(p + i, n - i);
            if (k) {
                put(w, s + i, k);
                i += k;
            } else { /* not UTF-8 (a file name's byte, a cut character): "\\xNN", as the text report */
                char esc[5] = {'\\', '\\', 'x', digits[c >> 4], digits[c & 15]};
                put(w, esc, 5);
                i++;
            }
        }
    }
    tg_w_char(w, '"');
}
