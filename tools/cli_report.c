/* tunerguard report: summarize report files of one or many processes, and
 * merge Chrome trace files.
 *
 * Contract: PATHs are files or directories (searched recursively).  Report
 * files are named <prefix>.<pid>.{jsonl,txt} or <prefix>.rank<R>.<pid>.*;
 * for one stem the .jsonl is read and the .txt only for its SUMMARY lines;
 * a .txt without a .jsonl is parsed as the fallback (no timestamps there).
 * Unparseable JSON lines (a process killed mid-write) are counted and
 * skipped.  Exit: 0 no race, 1 races found, 2 usage error or nothing found. */
#include "cli.h"
#include "cli_json.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct race {
    char *kernel;
    int high, serialized;
    long pid, rank; /* rank -1: none */
    long long ts;   /* -1: unknown (text fallback) */
    char *file;
    char *where;
};

struct strcount {
    char *s;
    int n;
};

struct state {
    char **files; /* report and trace files found */
    size_t nfiles;
    struct race *races;
    size_t nraces;
    struct strcount *summary;
    size_t nsummary;
    long procs[1024][2]; /* pid, rank */
    size_t nprocs;
    int replaced, other, bad_lines;
};

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static void add_file(struct state *st, const char *path)
{
    st->files = realloc(st->files, (st->nfiles + 1) * sizeof *st->files);
    if (!st->files)
        abort();
    st->files[st->nfiles++] = strdup(path);
}

static int wanted(const char *name)
{
    return has_suffix(name, ".jsonl") || has_suffix(name, ".txt") || has_suffix(name, ".trace.json");
}

/* Report file names: PREFIX.<digits>.EXT or PREFIX.rank<digits>.<digits>.EXT */
static int report_shaped(const char *name)
{
    const char *ext = has_suffix(name, ".trace.json") ? name + strlen(name) - 11 : strrchr(name, '.');
    if (!ext)
        return 0;
    const char *q = ext;
    while (q > name && q[-1] >= '0' && q[-1] <= '9')
        q--;
    return q < ext && q > name && q[-1] == '.';
}

static void collect(struct state *st, const char *path, int depth)
{
    struct stat sb;
    if (stat(path, &sb) < 0) {
        fprintf(stderr, "tunerguard: %s: no such file or directory\n", path);
        return;
    }
    if (S_ISREG(sb.st_mode)) {
        add_file(st, path);
        return;
    }
    if (!S_ISDIR(sb.st_mode) || depth > 8)
        return;
    struct dirent **list;
    int n = scandir(path, &list, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (name[0] != '.') {
            char sub[PATH_MAX];
            snprintf(sub, sizeof sub, "%s%s%s", path, has_suffix(path, "/") ? "" : "/", name);
            struct stat cs;
            if (stat(sub, &cs) == 0 && S_ISDIR(cs.st_mode))
                collect(st, sub, depth + 1);
            else if (wanted(name) && report_shaped(name))
                add_file(st, sub);
        }
        free(list[i]);
    }
    free(list);
}

static void note_proc(struct state *st, long pid, long rank)
{
    for (size_t i = 0; i < st->nprocs; i++)
        if (st->procs[i][0] == pid && st->procs[i][1] == rank)
            return;
    if (st->nprocs < sizeof st->procs / sizeof st->procs[0]) {
        st->procs[st->nprocs][0] = pid;
        st->procs[st->nprocs][1] = rank;
        st->nprocs++;
    }
}

static void add_race(struct state *st, struct race r)
{
    st->races = realloc(st->races, (st->nraces + 1) * sizeof *st->races);
    if (!st->races)
        abort();
    st->races[st->nraces++] = r;
}

static void add_summary(struct state *st, const char *line, size_t len)
{
    for (size_t i = 0; i < st->nsummary; i++)
        if (strlen(st->summary[i].s) == len && !strncmp(st->summary[i].s, line, len)) {
            st->summary[i].n++;
            return;
        }
    st->summary = realloc(st->summary, (st->nsummary + 1) * sizeof *st->summary);
    if (!st->summary)
        abort();
    st->summary[st->nsummary].s = strndup(line, len);
    st->summary[st->nsummary++].n = 1;
}

static void read_jsonl(struct state *st, const char *path)
{
    size_t len;
    char *text = cli_read_file(path, &len);
    if (!text)
        return;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (json_ws(p, le) < le) {
            const char *stop;
            struct json *v = json_parse(p, le, &stop);
            if (!v || v->type != JSON_OBJ || json_ws(stop, le) != le) {
                st->bad_lines++;
            } else {
                const char *kind = json_str(json_get(v, "kind"));
                long pid = (long)json_int(json_get(v, "pid"), 0);
                long rank = (long)json_int(json_get(v, "rank"), -1);
                note_proc(st, pid, rank);
                if (kind && strcmp(kind, "race") == 0) {
                    const struct json *tuner = json_get(v, "tuner"), *loc = json_get(v, "location");
                    const char *k = json_str(json_get(tuner, "kernel"));
                    const char *sev = json_str(json_get(v, "severity"));
                    const struct json *ser = json_get(v, "serialized");
                    char where[1024] = "";
                    if (loc && loc->type == JSON_OBJ)
                        snprintf(where, sizeof where, "%s:%lld in %s", json_str(json_get(loc, "file")) ?: "?",
                                 json_int(json_get(loc, "line"), 0), json_str(json_get(loc, "func")) ?: "?");
                    add_race(st, (struct race){.kernel = strdup(k ? k : "?"),
                                               .high = sev && !strcmp(sev, "high"),
                                               .serialized = ser && ser->type == JSON_BOOL && ser->boolean,
                                               .pid = pid, .rank = rank,
                                               .ts = json_int(json_get(v, "ts_ns"), -1),
                                               .file = strdup(path), .where = strdup(where)});
                } else if (kind && strcmp(kind, "method_replaced") == 0) {
                    st->replaced++;
                } else {
                    st->other++;
                }
            }
            json_free(v);
        }
        p = nl ? nl + 1 : end;
    }
    free(text);
}

static long num_after(const char *s, const char *key, long def)
{
    const char *p = strstr(s, key);
    return p ? strtol(p + strlen(key), NULL, 10) : def;
}

/* The text report: SUMMARY lines always; races only when FULL (no .jsonl). */
static void read_txt(struct state *st, const char *path, int full)
{
    char *text = cli_read_file(path, NULL);
    if (!text)
        return;
    struct race cur = {0};
    int in_race = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (!strncmp(line, "SUMMARY: tunerguard: ", 21))
            add_summary(st, line, len);
        if (full) {
            if (!strncmp(line, "WARNING: tunerguard: ", 21)) {
                char hdr[512];
                snprintf(hdr, sizeof hdr, "%.*s", (int)len, line);
                long pid = num_after(hdr, "pid=", 0), rank = num_after(hdr, "rank=", -1);
                note_proc(st, pid, rank);
                in_race = strstr(hdr, "entered a tuner") != NULL;
                if (strstr(hdr, "method replaced"))
                    st->replaced++;
                cur = (struct race){.pid = pid, .rank = rank, .ts = -1};
            } else if (in_race && !strncmp(line, "  Call of ", 10)) {
                const char *k = strstr(line, "on kernel '");
                if (k && k < line + len) {
                    k += 11;
                    const char *q = memchr(k, '\'', (size_t)(line + len - k));
                    free(cur.kernel);
                    cur.kernel = q ? strndup(k, (size_t)(q - k)) : NULL;
                }
            } else if (in_race && !strncmp(line, "  Severity: ", 12)) {
                cur.high = !strncmp(line + 12, "high", 4);
            } else if (in_race && !strncmp(line, "  serialize mode: ", 18)) {
                cur.serialized = 1;
            } else if (in_race && !strncmp(line, "SUMMARY: ", 9)) {
                const char *in = strstr(line, " in ");
                cur.where = strndup(in ? in + 4 : "", in ? (size_t)(line + len - in - 4) : 0);
                if (!cur.kernel)
                    cur.kernel = strdup("?");
                cur.file = strdup(path);
                add_race(st, cur);
                cur = (struct race){0};
                in_race = 0;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(cur.kernel);
    free(text);
}

/* Path with EXT replaced: STEM is PATH without its ".jsonl"/".txt". */
static int sibling_exists(const char *path, const char *from, const char *to)
{
    char sib[PATH_MAX];
    snprintf(sib, sizeof sib, "%.*s%s", (int)(strlen(path) - strlen(from)), path, to);
    struct stat sb;
    return stat(sib, &sb) == 0 && S_ISREG(sb.st_mode);
}

int cli_report_merge_trace(char **files, size_t n, const char *out); /* cli_trace.c */

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Distinct values of pid (which=0) or rank (which=1, -1 skipped) among races of KERNEL (NULL: all). */
static size_t distinct(const struct state *st, const char *kernel, int which, long *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < st->nraces; i++) {
        const struct race *r = &st->races[i];
        if (kernel && strcmp(r->kernel, kernel))
            continue;
        long v = which ? r->rank : r->pid;
        if (which && v < 0)
            continue;
        size_t j = 0;
        while (j < n && out[j] != v)
            j++;
        if (j == n && n < cap)
            out[n++] = v;
    }
    qsort(out, n, sizeof *out, cmp_long);
    return n;
}

static void put_longs(struct cli_buf *b, const long *v, size_t n, int json)
{
    if (json)
        cli_buf_puts(b, "[");
    for (size_t i = 0; i < n; i++)
        cli_buf_printf(b, "%s%ld", i ? (json ? "," : " ") : "", v[i]);
    if (json)
        cli_buf_puts(b, "]");
    else if (!n)
        cli_buf_puts(b, "-");
}

static void print_summary(const struct state *st, int as_json)
{
    /* kernels in order of first appearance */
    const char *kernels[256];
    size_t nk = 0;
    for (size_t i = 0; i < st->nraces && nk < 256; i++) {
        size_t j = 0;
        while (j < nk && strcmp(kernels[j], st->races[i].kernel))
            j++;
        if (j == nk)
            kernels[nk++] = st->races[i].kernel;
    }
    struct cli_buf b = {0};
    long vals[1024];
    size_t nproc_r = 0, nranks = 0;
    long ranks[1024];
    for (size_t i = 0; i < st->nprocs; i++) {
        nproc_r++;
        size_t j = 0;
        while (j < nranks && ranks[j] != st->procs[i][1])
            j++;
        if (st->procs[i][1] >= 0 && j == nranks)
            ranks[nranks++] = st->procs[i][1];
    }
    qsort(ranks, nranks, sizeof *ranks, cmp_long);
    int high = 0, ser = 0;
    for (size_t i = 0; i < st->nraces; i++)
        high += st->races[i].high, ser += st->races[i].serialized;

    if (as_json) {
        cli_buf_printf(&b, "{\"files\":%zu,\"processes\":[", st->nfiles);
        for (size_t i = 0; i < st->nprocs; i++) {
            cli_buf_printf(&b, "%s{\"pid\":%ld,\"rank\":", i ? "," : "", st->procs[i][0]);
            if (st->procs[i][1] >= 0)
                cli_buf_printf(&b, "%ld}", st->procs[i][1]);
            else
                cli_buf_puts(&b, "null}");
        }
        cli_buf_puts(&b, "],\"ranks\":");
        put_longs(&b, ranks, nranks, 1);
        cli_buf_printf(&b, ",\"races\":%zu,\"high\":%d,\"low\":%zu,\"serialized\":%d,\"method_replaced\":%d,"
                       "\"unreadable_lines\":%d,\"kernels\":[",
                       st->nraces, high, st->nraces - (size_t)high, ser, st->replaced, st->bad_lines);
    } else {
        cli_buf_printf(&b, "%zu report file%s, %zu process%s", st->nfiles, st->nfiles == 1 ? "" : "s", nproc_r,
                       nproc_r == 1 ? "" : "es");
        if (nranks) {
            cli_buf_puts(&b, ", ranks ");
            put_longs(&b, ranks, nranks, 0);
        }
        cli_buf_printf(&b, "\n%zu race%s: %d high, %zu low, %d serialized", st->nraces, st->nraces == 1 ? "" : "s",
                       high, st->nraces - (size_t)high, ser);
        if (st->replaced)
            cli_buf_printf(&b, "; %d method replacement%s", st->replaced, st->replaced == 1 ? "" : "s");
        if (st->bad_lines)
            cli_buf_printf(&b, "; %d unreadable line%s skipped", st->bad_lines, st->bad_lines == 1 ? "" : "s");
        cli_buf_puts(&b, "\n");
    }
    for (size_t k = 0; k < nk; k++) {
        int n = 0, h = 0, s = 0;
        const struct race *first = NULL;
        for (size_t i = 0; i < st->nraces; i++) {
            const struct race *r = &st->races[i];
            if (strcmp(r->kernel, kernels[k]))
                continue;
            n++, h += r->high, s += r->serialized;
            if (!first || (r->ts >= 0 && (first->ts < 0 || r->ts < first->ts)))
                first = r;
        }
        if (as_json) {
            cli_buf_printf(&b, "%s{\"kernel\":", k ? "," : "");
            json_put_str(&b, kernels[k]);
            cli_buf_printf(&b, ",\"races\":%d,\"high\":%d,\"low\":%d,\"serialized\":%d,\"pids\":", n, h, n - h, s);
            put_longs(&b, vals, distinct(st, kernels[k], 0, vals, 1024), 1);
            cli_buf_puts(&b, ",\"ranks\":");
            put_longs(&b, vals, distinct(st, kernels[k], 1, vals, 1024), 1);
            cli_buf_puts(&b, ",\"first\":{\"ts_ns\":");
            if (first->ts >= 0)
                cli_buf_printf(&b, "%lld", first->ts);
            else
                cli_buf_puts(&b, "null");
            cli_buf_printf(&b, ",\"pid\":%ld,\"file\":", first->pid);
            json_put_str(&b, first->file);
            cli_buf_puts(&b, ",\"location\":");
            json_put_str(&b, first->where);
            cli_buf_puts(&b, "}}");
        } else {
            cli_buf_printf(&b, "\nkernel '%s': %d race%s (%d high, %d low, %d serialized)\n", kernels[k], n,
                           n == 1 ? "" : "s", h, n - h, s);
            cli_buf_puts(&b, "  processes: ");
            put_longs(&b, vals, distinct(st, kernels[k], 0, vals, 1024), 0);
            cli_buf_puts(&b, "   ranks: ");
            put_longs(&b, vals, distinct(st, kernels[k], 1, vals, 1024), 0);
            cli_buf_puts(&b, "\n  first: ");
            if (first->ts >= 0)
                cli_buf_printf(&b, "ts_ns=%lld ", first->ts);
            cli_buf_printf(&b, "pid %ld in %s\n", first->pid, first->file);
            if (first->where && *first->where)
                cli_buf_printf(&b, "  at: %s\n", first->where);
        }
    }
    if (as_json) {
        cli_buf_puts(&b, "],\"summary_lines\":[");
        for (size_t i = 0; i < st->nsummary; i++) {
            cli_buf_printf(&b, "%s{\"count\":%d,\"line\":", i ? "," : "", st->summary[i].n);
            json_put_str(&b, st->summary[i].s);
            cli_buf_puts(&b, "}");
        }
        cli_buf_puts(&b, "]}\n");
    } else if (st->nsummary) {
        cli_buf_puts(&b, "\n");
        for (size_t i = 0; i < st->nsummary; i++)
            cli_buf_printf(&b, "%4dx %s\n", st->summary[i].n, st->summary[i].s);
    }
    fputs(b.s ? b.s : "", stdout);
    cli_buf_free(&b);
}

int cli_report(int argc, char **argv)
{
    int as_json = 0;
    const char *trace_out = NULL;
    struct state *st = calloc(1, sizeof *st);
    if (!st)
        return 1;
    int npaths = 0;
    char **paths = calloc((size_t)argc, sizeof *paths);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a))
            return cli_help("report");
        if (!strcmp(a, "--json")) {
            as_json = 1;
        } else if (!strcmp(a, "--trace") || !strncmp(a, "--trace=", 8)) {
            trace_out = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (!trace_out || !*trace_out)
                return cli_usage("report", "--trace needs an output file");
        } else if (!strcmp(a, "--")) {
            while (++i < argc)
                paths[npaths++] = argv[i];
        } else if (a[0] == '-' && a[1]) {
            return cli_usage("report", "unknown flag '%s'", a);
        } else {
            paths[npaths++] = argv[i];
        }
    }
    if (!npaths)
        return cli_usage("report", "no report file or directory given");
    for (int i = 0; i < npaths; i++)
        collect(st, paths[i], 0);
    free(paths);

    size_t nreports = 0;
    char **traces = calloc(st->nfiles + 1, sizeof *traces);
    size_t ntraces = 0;
    for (size_t i = 0; i < st->nfiles; i++) {
        const char *f = st->files[i];
        if (has_suffix(f, ".trace.json")) {
            traces[ntraces++] = st->files[i];
        } else if (has_suffix(f, ".jsonl")) {
            read_jsonl(st, f);
            nreports++;
            if (sibling_exists(f, ".jsonl", ".txt")) {
                char txt[PATH_MAX];
                snprintf(txt, sizeof txt, "%.*s.txt", (int)(strlen(f) - 6), f);
                read_txt(st, txt, 0);
            }
        } else if (has_suffix(f, ".txt") && !sibling_exists(f, ".txt", ".jsonl")) {
            read_txt(st, f, 1);
            nreports++;
        } else if (has_suffix(f, ".txt")) {
            /* read with its .jsonl; counted there, unless the .jsonl was not among the PATHs */
            int listed = 0;
            for (size_t j = 0; j < st->nfiles; j++)
                listed |= has_suffix(st->files[j], ".jsonl") &&
                          strlen(st->files[j]) == strlen(f) + 2 && !strncmp(st->files[j], f, strlen(f) - 4);
            if (!listed) {
                read_txt(st, f, 1);
                nreports++;
            }
        } else {
            fprintf(stderr, "tunerguard: %s: not a report (.jsonl, .txt) or trace (.trace.json) file; skipped\n", f);
        }
    }
    int rc = 0;
    if (trace_out) {
        if (!ntraces) {
            fprintf(stderr, "tunerguard: no trace files (*.trace.json) under the given paths\n");
            rc = 2;
        } else if (cli_report_merge_trace(traces, ntraces, trace_out) < 0) {
            rc = 1;
        }
    }
    if (!nreports && !(trace_out && ntraces)) {
        fprintf(stderr, "tunerguard: no report files (<prefix>.<pid>.jsonl or .txt) under the given paths\n");
        return 2;
    }
    if (nreports) {
        st->nfiles = nreports;
        print_summary(st, as_json);
    }
    free(traces);
    if (rc)
        return rc;
    return st->nraces ? 1 : 0;
}
