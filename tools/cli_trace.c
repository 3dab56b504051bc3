/* tunerguard report --trace OUT: merge Chrome trace files into one.
 *
 * Contract: each input is either the JSON Array Format ("[ev, ev, ...") or the
 * JSON Object Format ({"traceEvents": [ev, ...], ...}).  A file cut short (a
 * process that died: no closing bracket, a half-written last event) keeps
 * every complete event before the cut.  The output is
 * {"traceEvents":[...],"displayTimeUnit":"ms"} with the events copied byte
 * for byte, in input order (Perfetto sorts by ts), plus a process_labels
 * event "rank R" for each rank-named file.  Timestamps are not shifted: each
 * file's clock starts when its process loaded the library (docs/trace.md). */
#include "cli.h"
#include "cli_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_report_merge_trace(char **files, size_t n, const char *out);

/* Append the complete events of the array starting at P ('[') to B.  Returns
 * the number of events, *truncated set when the array was not closed. */
static size_t copy_events(const char *p, const char *end, struct cli_buf *b, size_t *total, int *truncated)
{
    size_t n = 0;
    p = json_ws(p + 1, end);
    *truncated = 1;
    while (p < end) {
        if (*p == ']') {
            *truncated = 0;
            break;
        }
        const char *q = json_skip(p, end);
        if (!q)
            break;
        if (*p == '{') { /* events are objects; anything else is skipped */
            if (*total)
                cli_buf_puts(b, ",\n");
            cli_buf_add(b, p, (size_t)(q - p));
            (*total)++;
            n++;
        }
        p = json_ws(q, end);
        if (p < end && *p == ',')
            p = json_ws(p + 1, end);
        else if (p < end && *p != ']')
            break;
    }
    return n;
}

/* Find the "traceEvents" array of an object-format file; NULL if absent. */
static const char *find_events(const char *p, const char *end)
{
    p = json_ws(p + 1, end);
    while (p < end && *p == '"') {
        const char *k = p;
        const char *q = json_skip(p, end);
        if (!q)
            return NULL;
        int is_events = q - k == 13 && !memcmp(k, "\"traceEvents\"", 13);
        p = json_ws(q, end);
        if (p >= end || *p != ':')
            return NULL;
        p = json_ws(p + 1, end);
        if (is_events)
            return p < end && *p == '[' ? p : NULL;
        if (!(q = json_skip(p, end)))
            return NULL;
        p = json_ws(q, end);
        if (p < end && *p == ',')
            p = json_ws(p + 1, end);
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

int cli_report_merge_trace(char **files, size_t n, const char *out)
{
    struct cli_buf b = {0};
    size_t total = 0;
    cli_buf_puts(&b, "{\"traceEvents\":[\n");
    for (size_t i = 0; i < n; i++) {
        size_t len;
        char *text = cli_read_file(files[i], &len);
        if (!text) {
            fprintf(stderr, "tunerguard: cannot read %s\n", files[i]);
            continue;
        }
        const char *end = text + len, *p = json_ws(text, end);
        const char *arr = p < end && *p == '[' ? p : (p < end && *p == '{' ? find_events(p, end) : NULL);
        if (!arr) {
            fprintf(stderr, "tunerguard: %s: not a Chrome trace (no event array); skipped\n", files[i]);
        } else {
            int truncated;
            label_rank(files[i], &b, &total);
            size_t k = copy_events(arr, end, &b, &total, &truncated);
            if (truncated)
                fprintf(stderr, "tunerguard: %s: truncated; kept its %zu complete event%s\n", files[i], k,
                        k == 1 ? "" : "s");
        }
        free(text);
    }
    cli_buf_puts(&b, "\n],\"displayTimeUnit\":\"ms\"}\n");
    FILE *f = fopen(out, "w");
    if (!f || fwrite(b.s, 1, b.len, f) != b.len || fclose(f) != 0) {
        perror(out);
        cli_buf_free(&b);
        return -1;
    }
    fprintf(stderr, "tunerguard: wrote %s: %zu events from %zu trace file%s\n", out, total, n, n == 1 ? "" : "s");
    cli_buf_free(&b);
    return 0;
}
