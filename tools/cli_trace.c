/* tunerguard report --trace OUT: merge Chrome trace files into one.
 *
 * Contract: each input is either the JSON Array Format ("[ev, ev, ...") or the
 * JSON Object Format ({"traceEvents": [ev, ...], ...}).  A file cut short (a
 * process that died: no closing bracket, a half-written last event) keeps
 * every complete event before the cut.  The output is
 * {"traceEvents":[...],"displayTimeUnit":"ms"} with the events copied byte
 * for byte, in input order (Perfetto sorts by ts), plus a process_labels
 * event "rank R" for each rank-named file.  Timestamps are not shifted: each
 * file's clock starts when its process loaded the library (docs/trace.md).
 * The events are found with jansson (cli_jskip), copied as they were written. */
#include "cli.h"
#include "cli_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Append the complete events of the array starting at P ('[') to B.  Returns
 * the number of events, *truncated set when the array was not closed. */
static size_t copy_events(const char *p, const char *end, struct cli_buf *b, size_t *total, int *truncated)
{
    size_t n = 0;
    p = cli_jws(p + 1, end);
    *truncated = 1;
    while (p < end) {
        if (*p == ']') {
            *truncated = 0;
            break;
        }
        const char *q = cli_jskip(p, end);
        if (!q)
            break;
        if (*p == '{') { /* events are objects; anything else is skipped */
            if (*total)
                cli_buf_puts(b, ",\n");
            cli_buf_add(b, p, (size_t)(q - p));
            (*total)++;
            n++;
        }
        p = cli_jws(q, end);
        if (p < end && *p == ',')
            p = cli_jws(p + 1, end);
        else if (p < end && *p != ']')
            break;
    }
    return n;
}

/* Find the "traceEvents" array of an object-format file; NULL if absent. */
static const char *find_events(const char *p, const char *end)
{
    p = cli_jws(p + 1, end);
    while (p < end && *p == '"') {
        const char *k = p;
        const char *q = cli_jskip(p, end);
        if (!q)
            return NULL;
        int is_events = q - k == 13 && !memcmp(k, "\"traceEvents\"", 13);
        p = cli_jws(q, end);
        if (p >= end || *p != ':')
            return NULL;
        p = cli_jws(p + 1, end);
        if (is_events)
            return p < end && *p == '[' ? p : NULL;
        if (!(q = cli_jskip(p, end)))
            return NULL;
        p = cli_jws(q, end);
        if (p < end && *p == ',')
            p = cli_jws(p + 1, end);
    }
    return NULL;
}

/* <prefix>.rank<R>.<pid>.trace.json: a process_labels event "rank R" for PID,
 * so the ranks are told apart in the merged view. */
static void label_rank(const char *path, struct cli_buf *b, size_t *total)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *r = strstr(base, ".rank");
    long rank, pid;
    char tail[16];
    if (!r || sscanf(r, ".rank%ld.%ld%15s", &rank, &pid, tail) != 3 || strcmp(tail, ".trace.json"))
        return;
    cli_buf_printf(b, "%s{\"ph\":\"M\",\"pid\":%ld,\"name\":\"process_labels\",\"args\":{\"labels\":\"rank %ld\"}}",
                   *total ? ",\n" : "", pid, rank);
    (*total)++;
}

int cli_trace_add(struct cli_trace *t, const char *path, const char *text, size_t len)
{
    struct cli_buf *b = &t->out;
    if (!t->files++)
        cli_buf_puts(b, "{\"traceEvents\":[\n");
    const char *end = text + len, *p = cli_jws(text, end);
    const char *arr = p < end && *p == '[' ? p : (p < end && *p == '{' ? find_events(p, end) : NULL);
    if (!arr) {
        cli_errf("%s: not a Chrome trace (no event array); skipped", path);
        return -1;
    }
    int truncated;
    label_rank(path, b, &t->events);
    size_t k = copy_events(arr, end, b, &t->events, &truncated);
    if (truncated)
        cli_errf("%s: truncated; kept its %zu complete event%s", path, k, k == 1 ? "" : "s");
    return truncated;
}

int cli_trace_write(struct cli_trace *t, const char *out)
{
    struct cli_buf *b = &t->out;
    if (!t->files)
        cli_buf_puts(b, "{\"traceEvents\":[\n");
    cli_buf_puts(b, "\n],\"displayTimeUnit\":\"ms\"}\n");
    /* Written beside OUT under a new name, then renamed over it: never
     * through a symlink at OUT (the link itself is replaced), never into a
     * FIFO or device there (opening one for writing waits for a reader),
     * and OUT is not emptied when the write fails. */
    size_t n = strlen(out);
    char *tmp = malloc(n + sizeof ".tmp.XXXXXX");
    int rc = 0, fd = -1;
    if (tmp) {
        memcpy(tmp, out, n);
        memcpy(tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
        fd = mkstemp(tmp);
    }
    if (fd < 0) {
        cli_errf("cannot write %s: %s", out, strerror(tmp ? errno : ENOMEM));
        rc = -1;
    } else {
        mode_t um = umask(0);
        umask(um);
        int bad = fchmod(fd, 0666 & ~um) != 0;
        for (size_t off = 0; !bad && off < b->len;) {
            ssize_t w = write(fd, b->s + off, b->len - off);
            if (w < 0 && errno == EINTR)
                continue;
            bad = w <= 0;
            off += w > 0 ? (size_t)w : 0;
        }
        int saved = errno;
        if (close(fd) != 0 && !bad) {
            bad = 1;
            saved = errno;
        }
        if (!bad && rename(tmp, out) != 0) {
            bad = 1;
            saved = errno;
        }
        if (bad) {
            unlink(tmp);
            cli_errf("cannot write %s: %s", out, strerror(saved ? saved : EIO));
            rc = -1;
        }
    }
    free(tmp);
    if (rc == 0)
        cli_errf("wrote %s: %zu events from %zu trace file%s", out, t->events, t->files, t->files == 1 ? "" : "s");
    cli_buf_free(b);
    return rc;
}
