/* tunerguard report: summarize report files of one or many processes, and
 * merge Chrome trace files.
 *
 * Contract: PATHs are files or directories (searched recursively).  Report
 * files are named <prefix>.<pid>.{jsonl,txt} or <prefix>.rank<R>.<pid>.*;
 * for one stem the .jsonl is read and the .txt only for its SUMMARY lines;
 * a .txt without a .jsonl is parsed as the fallback (no timestamps there).
 * Unparseable JSON lines (a process killed mid-write) are counted and
 * skipped.  "fatal" records (a process that died of SIGSEGV, SIGBUS, SIGABRT,
 * SIGFPE or SIGILL; in the fallback, and for a .jsonl without any, the .txt's
 * "fatal signal" block) are listed per process and linked to the race records
 * of that process (pid, rank): the kernel by the record's race_seq, else by
 * its tuner instance.  Exit: 0 no race and no fatal signal, 1 races or fatal
 * signals found, 2 usage error or nothing found. */
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
    long long seq;  /* -1: unknown (text fallback) */
    char *instance; /* tuner.instance ("0x..."), NULL: unknown */
    char *file;
    char *where;
};

/* A thread inside a tuner when a process died, in a session that raced. */
struct occupant {
    long tid;
    long long race_seq;
    char *instance;
};

/* A process that died of a fatal signal (one "fatal" record or text block). */
struct fatal {
    long pid, rank;      /* rank -1: none */
    long long seq;       /* -1: unknown (text fallback) */
    char *signal;        /* "SIGSEGV" */
    long tid;            /* the thread that received it; -1: unknown */
    char *fault_addr;    /* NULL: none (a sent signal) */
    int in_tuner;        /* 1 inside a tuner, 0 inside none, -1 unknown (text fallback) */
    char *instance;      /* the innermost tuner's instance, NULL: none/unknown */
    char *kernel;        /* tuner.kernel as written, NULL: null */
    long long race_seq;  /* -1: null */
    long reports_before; /* -1: unknown */
    char *file;
    struct occupant *occ; /* other sessions in tuners that raced (race_seq set) */
    size_t nocc;
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
    struct fatal *fatals;
    size_t nfatals;
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

static void add_fatal(struct state *st, struct fatal f)
{
    st->fatals = realloc(st->fatals, (st->nfatals + 1) * sizeof *st->fatals);
    if (!st->fatals)
        abort();
    st->fatals[st->nfatals++] = f;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The "fatal" record V (a JSON object) of file PATH. */
static void add_fatal_record(struct state *st, const struct json *v, const char *path, long pid, long rank)
{
    const struct json *tuner = json_get(v, "tuner"), *tuners = json_get(v, "tuners");
    const char *sig = json_str(json_get(v, "signal"));
    char signame[32];
    if (!sig) {
        snprintf(signame, sizeof signame, "signal %lld", json_int(json_get(v, "signo"), 0));
        sig = signame;
    }
    struct fatal f = {.pid = pid, .rank = rank,
                      .seq = json_int(json_get(v, "seq"), -1),
                      .signal = strdup(sig),
                      .tid = (long)json_int(json_get(v, "tid"), -1),
                      .fault_addr = dup_or_null(json_str(json_get(v, "fault_addr"))),
                      .in_tuner = tuner && tuner->type == JSON_OBJ,
                      .instance = dup_or_null(json_str(json_get(tuner, "instance"))),
                      .kernel = dup_or_null(json_str(json_get(tuner, "kernel"))),
                      .race_seq = json_int(json_get(v, "race_seq"), -1),
                      .reports_before = (long)json_int(json_get(v, "reports_before"), -1),
                      .file = strdup(path)};
    for (size_t i = 0; tuners && tuners->type == JSON_ARR && i < tuners->n; i++) {
        const char *inst = json_str(json_get(tuners->items[i], "instance"));
        const struct json *occ = json_get(tuners->items[i], "occupants");
        for (size_t j = 0; occ && occ->type == JSON_ARR && j < occ->n; j++) {
            long long rs = json_int(json_get(occ->items[j], "race_seq"), -1);
            if (rs < 0)
                continue;
            f.occ = realloc(f.occ, (f.nocc + 1) * sizeof *f.occ);
            if (!f.occ)
                abort();
            f.occ[f.nocc++] = (struct occupant){.tid = (long)json_int(json_get(occ->items[j], "tid"), -1),
                                                .race_seq = rs, .instance = dup_or_null(inst)};
        }
    }
    add_fatal(st, f);
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

/* Returns the number of "fatal" records read. */
static int read_jsonl(struct state *st, const char *path)
{
    size_t len;
    int nfatal = 0;
    char *text = cli_read_file(path, &len);
    if (!text)
        return 0;
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
                                               .seq = json_int(json_get(v, "seq"), -1),
                                               .instance = dup_or_null(json_str(json_get(tuner, "instance"))),
                                               .file = strdup(path), .where = strdup(where)});
                } else if (kind && strcmp(kind, "method_replaced") == 0) {
                    st->replaced++;
                } else if (kind && strcmp(kind, "fatal") == 0) {
                    add_fatal_record(st, v, path, pid, rank);
                    nfatal++;
                } else {
                    st->other++;
                }
            }
            json_free(v);
        }
        p = nl ? nl + 1 : end;
    }
    free(text);
    return nfatal;
}

static long num_after(const char *s, const char *key, long def)
{
    const char *p = strstr(s, key);
    return p ? strtol(p + strlen(key), NULL, 10) : def;
}

/* R of a file named PREFIX.rank<R>.<pid>.EXT, else -1 (a fatal block's
 * header has no rank=). */
static long rank_in_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = strstr(base, ".rank"); p; p = strstr(p + 1, ".rank")) {
        char *e;
        if (p[5] >= '0' && p[5] <= '9') {
            long r = strtol(p + 5, &e, 10);
            if (*e == '.')
                return r;
        }
    }
    return -1;
}

/* The text report: SUMMARY lines always; races only when FULL (no .jsonl);
 * "fatal signal" blocks when FATALS.  A fatal block is
 *   WARNING: tunerguard: fatal signal SIGSEGV (pid=4242)
 *     Received by thread tid=4250, si_code=1, fault address 0x8
 *   ... SUMMARY: tunerguard: fatal signal SIGSEGV in thread tid=4250 (pid=4242)
 * Of its tuner state only "(no thread is inside a tuner)" is read: no kernel
 * or instance there. */
static void read_txt(struct state *st, const char *path, int full, int fatals)
{
    char *text = cli_read_file(path, NULL);
    if (!text)
        return;
    struct race cur = {0};
    int in_race = 0;
    long cur_fatal = -1; /* index in st->fatals of the fatal block being read */
    long blocks = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char hdr[512];
        snprintf(hdr, sizeof hdr, "%.*s", (int)len, line);
        if (!strncmp(line, "SUMMARY: tunerguard: ", 21))
            add_summary(st, line, len);
        if (!strncmp(hdr, "WARNING: tunerguard: ", 21)) {
            cur_fatal = -1;
            if (fatals && !strncmp(hdr + 21, "fatal signal ", 13)) {
                cur_fatal = (long)st->nfatals;
                const char *sig = hdr + 34;
                add_fatal(st, (struct fatal){.pid = num_after(hdr, "pid=", 0),
                                             .rank = num_after(hdr, "rank=", rank_in_name(path)),
                                             .seq = -1, .signal = strndup(sig, strcspn(sig, " (")), .tid = -1,
                                             .in_tuner = -1, .race_seq = -1, .reports_before = blocks,
                                             .file = strdup(path)});
            }
            blocks++;
        } else if (cur_fatal >= 0 && !strncmp(hdr, "  Received by thread tid=", 25)) {
            struct fatal *f = &st->fatals[cur_fatal];
            f->tid = num_after(hdr, "tid=", -1);
            const char *fa = strstr(hdr, "fault address ");
            if (fa && !f->fault_addr)
                f->fault_addr = strndup(fa + 14, strcspn(fa + 14, ", "));
        } else if (cur_fatal >= 0 && !strcmp(hdr, "    (no thread is inside a tuner)")) {
            st->fatals[cur_fatal].in_tuner = 0;
        }
        if (full) {
            if (!strncmp(hdr, "WARNING: tunerguard: ", 21)) {
                long pid = num_after(hdr, "pid=", 0), rank = num_after(hdr, "rank=", rank_in_name(path));
                note_proc(st, pid, rank);
                in_race = strstr(hdr, "entered a tuner") != NULL;
                if (strstr(hdr, "method replaced"))
                    st->replaced++;
                free(cur.kernel);
                cur = (struct race){.pid = pid, .rank = rank, .ts = -1, .seq = -1};
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

static int same_instance(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    char *ea, *eb;
    unsigned long long x = strtoull(a, &ea, 16), y = strtoull(b, &eb, 16);
    return ea != a && eb != b && x == y;
}

/* The race record of process (PID, RANK) with seq SEQ, else NULL. */
static const struct race *race_by_seq(const struct state *st, long pid, long rank, long long seq)
{
    for (size_t i = 0; seq >= 0 && i < st->nraces; i++) {
        const struct race *r = &st->races[i];
        if (r->pid == pid && r->rank == rank && r->seq == seq)
            return r;
    }
    return NULL;
}

/* The latest (highest seq) race record of process (PID, RANK) on tuner INSTANCE, else NULL. */
static const struct race *race_by_instance(const struct state *st, long pid, long rank, const char *instance)
{
    const struct race *best = NULL;
    for (size_t i = 0; instance && i < st->nraces; i++) {
        const struct race *r = &st->races[i];
        if (r->pid == pid && r->rank == rank && same_instance(r->instance, instance) && (!best || r->seq > best->seq))
            best = r;
    }
    return best;
}

static const char *known_kernel(const struct race *r)
{
    return r && strcmp(r->kernel, "?") ? r->kernel : NULL;
}

/* The kernel of the tuner of a session (RACE_SEQ, INSTANCE) of process (PID,
 * RANK): by the race record RACE_SEQ (*BY_SEQ), else by a race record on
 * INSTANCE (*BY_INST), else WRITTEN (the record's own tuner.kernel), else NULL. */
static const char *session_kernel(const struct state *st, long pid, long rank, long long race_seq,
                                  const char *instance, const char *written, const struct race **by_seq,
                                  const struct race **by_inst)
{
    *by_seq = race_by_seq(st, pid, rank, race_seq);
    *by_inst = race_by_instance(st, pid, rank, instance);
    const char *k = known_kernel(*by_seq);
    if (!k)
        k = known_kernel(*by_inst);
    return k ? k : written;
}

static const char *fatal_kernel(const struct state *st, const struct fatal *f, const struct race **by_seq,
                                const struct race **by_inst)
{
    return session_kernel(st, f->pid, f->rank, f->race_seq, f->instance, f->kernel, by_seq, by_inst);
}

/* Number of distinct processes among the fatal records. */
static size_t fatal_procs(const struct state *st)
{
    size_t n = 0;
    for (size_t i = 0; i < st->nfatals; i++) {
        size_t j = 0;
        while (j < i && (st->fatals[j].pid != st->fatals[i].pid || st->fatals[j].rank != st->fatals[i].rank))
            j++;
        n += j == i;
    }
    return n;
}

/* "  pid 4242 rank 3: SIGSEGV (fault address 0x8) in tid 4250, inside kernel
 * 'matmul_kernel' in the call that raced (race report #1 of that process); 2
 * reports before it; file PATH", then one line per other thread that was
 * inside a tuner in a session that raced (at most 3). */
static void put_fatal_text(struct cli_buf *b, const struct state *st, const struct fatal *f)
{
    cli_buf_printf(b, "  pid %ld", f->pid);
    if (f->rank >= 0)
        cli_buf_printf(b, " rank %ld", f->rank);
    cli_buf_printf(b, ": %s", f->signal);
    if (f->fault_addr)
        cli_buf_printf(b, " (fault address %s)", f->fault_addr);
    if (f->tid >= 0)
        cli_buf_printf(b, " in tid %ld", f->tid);
    if (f->in_tuner < 0) {
        cli_buf_puts(b, ", tuner unknown (text report)");
    } else if (!f->in_tuner) {
        cli_buf_puts(b, ", not inside a tuner");
    } else {
        const struct race *rs, *ri;
        const char *k = fatal_kernel(st, f, &rs, &ri);
        if (k)
            cli_buf_printf(b, ", inside kernel '%s'", k);
        else
            cli_buf_printf(b, ", inside tuner %s", f->instance ? f->instance : "?");
        if (f->race_seq >= 0)
            cli_buf_printf(b, " in the call that raced (%srace report #%lld of that process%s)",
                           k ? "" : "kernel unknown; ", f->race_seq, rs ? "" : ", not in the files read");
        else if (ri)
            cli_buf_printf(b, " (%sthis call did not race; that tuner last raced in race report #%lld of that process)",
                           k ? "" : "kernel unknown; ", ri->seq);
        else
            cli_buf_printf(b, " (%sno race on that tuner in the files read)", k ? "" : "kernel unknown; ");
    }
    if (f->reports_before > 0)
        cli_buf_printf(b, "; %ld report%s before it", f->reports_before, f->reports_before == 1 ? "" : "s");
    else if (f->reports_before == 0)
        cli_buf_puts(b, "; no report before it");
    cli_buf_printf(b, "; file %s\n", f->file);
    size_t shown = 0, more = 0;
    for (size_t i = 0; i < f->nocc; i++) {
        const struct occupant *o = &f->occ[i];
        if (o->tid == f->tid && same_instance(o->instance, f->instance))
            continue; /* the dying thread's own session: on the line above */
        if (shown == 3) {
            more++;
            continue;
        }
        const struct race *rs, *ri;
        const char *k = session_kernel(st, f->pid, f->rank, o->race_seq, o->instance, NULL, &rs, &ri);
        cli_buf_printf(b, "    tid %ld was %sinside ", o->tid, o->tid == f->tid ? "also " : "");
        if (k)
            cli_buf_printf(b, "kernel '%s'", k);
        else
            cli_buf_printf(b, "tuner %s", o->instance ? o->instance : "?");
        cli_buf_printf(b, " (race report #%lld)\n", o->race_seq);
        shown++;
    }
    if (more)
        cli_buf_printf(b, "    and %zu more thread%s inside tuners that raced\n", more, more == 1 ? "" : "s");
}

static void put_fatal_json(struct cli_buf *b, const struct state *st, const struct fatal *f)
{
    const struct race *rs, *ri;
    cli_buf_printf(b, "{\"pid\":%ld,\"rank\":", f->pid);
    if (f->rank >= 0)
        cli_buf_printf(b, "%ld", f->rank);
    else
        cli_buf_puts(b, "null");
    cli_buf_puts(b, ",\"signal\":");
    json_put_str(b, f->signal);
    if (f->tid >= 0)
        cli_buf_printf(b, ",\"tid\":%ld", f->tid);
    else
        cli_buf_puts(b, ",\"tid\":null");
    cli_buf_puts(b, ",\"fault_addr\":");
    json_put_str(b, f->fault_addr);
    cli_buf_puts(b, ",\"kernel\":");
    json_put_str(b, f->in_tuner > 0 ? fatal_kernel(st, f, &rs, &ri) : NULL);
    cli_buf_puts(b, ",\"instance\":");
    json_put_str(b, f->instance);
    if (f->race_seq >= 0)
        cli_buf_printf(b, ",\"race_seq\":%lld", f->race_seq);
    else
        cli_buf_puts(b, ",\"race_seq\":null");
    if (f->reports_before >= 0)
        cli_buf_printf(b, ",\"reports_before\":%ld", f->reports_before);
    else
        cli_buf_puts(b, ",\"reports_before\":null");
    cli_buf_puts(b, ",\"file\":");
    json_put_str(b, f->file);
    cli_buf_puts(b, "}");
}

/* Fatal records by rank (none last), pid, seq. */
static int cmp_fatal(const void *a, const void *b)
{
    const struct fatal *x = a, *y = b;
    unsigned long rx = (unsigned long)x->rank, ry = (unsigned long)y->rank; /* -1: last */
    if (rx != ry)
        return (rx > ry) - (rx < ry);
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static void free_state(struct state *st)
{
    for (size_t i = 0; i < st->nfiles; i++)
        free(st->files[i]);
    free(st->files);
    for (size_t i = 0; i < st->nraces; i++) {
        free(st->races[i].kernel);
        free(st->races[i].instance);
        free(st->races[i].file);
        free(st->races[i].where);
    }
    free(st->races);
    for (size_t i = 0; i < st->nsummary; i++)
        free(st->summary[i].s);
    free(st->summary);
    for (size_t i = 0; i < st->nfatals; i++) {
        struct fatal *f = &st->fatals[i];
        free(f->signal);
        free(f->fault_addr);
        free(f->instance);
        free(f->kernel);
        free(f->file);
        for (size_t j = 0; j < f->nocc; j++)
            free(f->occ[j].instance);
        free(f->occ);
    }
    free(st->fatals);
    free(st);
}

/* NREPORTS: report files read (st->files also holds traces and .txt read with their .jsonl). */
static void print_summary(const struct state *st, size_t nreports, int as_json)
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
        cli_buf_printf(&b, "{\"files\":%zu,\"processes\":[", nreports);
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
        cli_buf_printf(&b, "%zu report file%s, %zu process%s", nreports, nreports == 1 ? "" : "s", nproc_r,
                       nproc_r == 1 ? "" : "es");
        if (nranks) {
            cli_buf_puts(&b, ", ranks ");
            put_longs(&b, ranks, nranks, 0);
        }
        cli_buf_printf(&b, "\n%zu race%s: %d high, %zu low, %d serialized", st->nraces, st->nraces == 1 ? "" : "s",
                       high, st->nraces - (size_t)high, ser);
        if (st->nfatals)
            cli_buf_printf(&b, "; %zu fatal signal%s", st->nfatals, st->nfatals == 1 ? "" : "s");
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
        cli_buf_puts(&b, "],\"fatal\":[");
        for (size_t i = 0; i < st->nfatals; i++) {
            cli_buf_puts(&b, i ? "," : "");
            put_fatal_json(&b, st, &st->fatals[i]);
        }
        cli_buf_puts(&b, "]");
    } else if (st->nfatals) {
        size_t np = fatal_procs(st);
        cli_buf_printf(&b, "\n%zu process%s died of a fatal signal:\n", np, np == 1 ? "" : "es");
        for (size_t i = 0; i < st->nfatals; i++)
            put_fatal_text(&b, st, &st->fatals[i]);
    }
    if (as_json) {
        cli_buf_puts(&b, ",\"summary_lines\":[");
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
    int npaths = 0;
    char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            free(paths);
            return cli_help("report");
        }
        if (!strcmp(a, "--json")) {
            as_json = 1;
        } else if (!strcmp(a, "--trace") || !strncmp(a, "--trace=", 8)) {
            trace_out = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (!trace_out || !*trace_out) {
                free(paths);
                return cli_usage("report", "--trace needs an output file");
            }
        } else if (!strcmp(a, "--")) {
            while (++i < argc)
                paths[npaths++] = argv[i];
        } else if (a[0] == '-' && a[1]) {
            free(paths);
            return cli_usage("report", "unknown flag '%s'", a);
        } else {
            paths[npaths++] = argv[i];
        }
    }
    if (!npaths) {
        free(paths);
        return cli_usage("report", "no report file or directory given");
    }
    struct state *st = calloc(1, sizeof *st);
    if (!st) {
        free(paths);
        return 1;
    }
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
            int nfatal = read_jsonl(st, f);
            nreports++;
            if (sibling_exists(f, ".jsonl", ".txt")) {
                char txt[PATH_MAX];
                snprintf(txt, sizeof txt, "%.*s.txt", (int)(strlen(f) - 6), f);
                /* the .txt's fatal block when the .jsonl has no fatal record (older library) */
                read_txt(st, txt, 0, nfatal == 0);
            }
        } else if (has_suffix(f, ".txt") && !sibling_exists(f, ".txt", ".jsonl")) {
            read_txt(st, f, 1, 1);
            nreports++;
        } else if (has_suffix(f, ".txt")) {
            /* read with its .jsonl; counted there, unless the .jsonl was not among the PATHs */
            int listed = 0;
            for (size_t j = 0; j < st->nfiles; j++)
                listed |= has_suffix(st->files[j], ".jsonl") &&
                          strlen(st->files[j]) == strlen(f) + 2 && !strncmp(st->files[j], f, strlen(f) - 4);
            if (!listed) {
                read_txt(st, f, 1, 1);
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
        rc = 2;
    } else if (nreports) {
        qsort(st->fatals, st->nfatals, sizeof *st->fatals, cmp_fatal);
        print_summary(st, nreports, as_json);
    }
    if (!rc)
        rc = st->nraces || st->nfatals ? 1 : 0;
    free(traces);
    free_state(st);
    return rc;
}
