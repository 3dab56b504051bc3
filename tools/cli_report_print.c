/* tunerguard report: printing the summary (text or JSON) of what
 * cli_report.c read, with each fatal record linked to the race records of its
 * process.  Strings from the files are escaped in the text output (cli_errf's
 * rules) and JSON-encoded by jansson in the JSON output. */
#include "cli_report.h"
#include "cli_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* S escaped for a terminal (cli_buf_put_esc); "" for NULL.  A "\\xNN" in S
 * stays as it is: the reports write a byte that is not UTF-8 (a folder named
 * in another encoding) so, and the text report shows it so.  The text stays
 * valid until eight more calls have been made (a ring of buffers, freed by
 * esc_free), which is enough for one line of output. */
static struct cli_buf esc_ring[8];
static unsigned esc_next;

static int is_byte_escape(const char *p)
{
    return p[0] == '\\' && p[1] == 'x' && isxdigit((unsigned char)p[2]) && isxdigit((unsigned char)p[3]);
}

static const char *esc(const char *s)
{
    struct cli_buf *b = &esc_ring[esc_next++ % 8];
    b->len = 0;
    const char *from = s ? s : "";
    for (const char *p = from; *p; p++) {
        if (!is_byte_escape(p))
            continue;
        cli_buf_put_esc(b, from, (size_t)(p - from));
        cli_buf_add(b, p, 4);
        from = p + 4;
        p += 3;
    }
    cli_buf_put_esc(b, from, strlen(from));
    cli_buf_add(b, "", 0);
    return b->s;
}

static void esc_free(void)
{
    for (size_t i = 0; i < 8; i++)
        cli_buf_free(&esc_ring[i]);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Distinct values of pid (which=0) or rank (which=1, -1 skipped) among races
 * of KERNEL (NULL: all), sorted, into OUT (room for CAP). */
static size_t distinct(const struct state *st, const char *kernel, int which, long *out, size_t cap)
{
    size_t n = 0;
    struct cli_pairset set = {0};
    for (size_t i = 0; i < st->nraces; i++) {
        const struct race *r = &st->races[i];
        if (kernel && strcmp(r->kernel, kernel))
            continue;
        long v = which ? r->rank : r->pid;
        if (which && v < 0)
            continue;
        if (n < cap && cli_pairset_add(&set, (uint64_t)v, 0))
            out[n++] = v;
    }
    cli_pairset_free(&set);
    qsort(out, n, sizeof *out, cmp_long);
    return n;
}

/* The text summary lists this many numbers (pids, ranks) in full; more are
 * summed up (put_longs_summary). */
#define TG_LONGS_LISTED 8

/* N sorted distinct numbers, more than TG_LONGS_LISTED, in one short line:
 * their count, then their runs of consecutive numbers ("100-1099") when
 * there are few, else the first three and the last two
 * ("10000 (20305 20523 20600 ... 40110 40111)"). */
static void put_longs_summary(struct cli_buf *b, const long *v, size_t n)
{
    size_t runs = 1;
    for (size_t i = 1; i < n; i++)
        runs += v[i] != v[i - 1] + 1;
    cli_buf_printf(b, "%zu (", n);
    if (runs <= TG_LONGS_LISTED / 2) {
        for (size_t i = 0; i < n;) {
            size_t k = i; /* the run v[i..k] */
            while (k + 1 < n && v[k + 1] == v[k] + 1)
                k++;
            cli_buf_printf(b, "%s%ld", i ? " " : "", v[i]);
            if (k > i)
                cli_buf_printf(b, "-%ld", v[k]);
            i = k + 1;
        }
    } else {
        cli_buf_printf(b, "%ld %ld %ld ... %ld %ld", v[0], v[1], v[2], v[n - 2], v[n - 1]);
    }
    cli_buf_puts(b, ")");
}

/* Numbers as a JSON array, or for the text summary separated by spaces
 * ("-" for none; past TG_LONGS_LISTED summed up). */
static void put_longs(struct cli_buf *b, const long *v, size_t n, int json)
{
    if (!json && n > TG_LONGS_LISTED) {
        put_longs_summary(b, v, n);
        return;
    }
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
    return r && !r->unnamed ? r->kernel : NULL;
}

/* Is race A earlier than B (NULL: no race yet)?  By the wall clock where
 * both have it (processes of several machines), else by the monotonic time. */
static int earlier(const struct race *a, const struct race *b)
{
    if (!b)
        return 1;
    if (a->wall >= 0 && b->wall >= 0)
        return a->wall < b->wall;
    return a->ts >= 0 && (b->ts < 0 || a->ts < b->ts);
}

/* WALL_NS as the local date and time, "2026-12-04 23:12:05"; "" if unknown. */
static const char *local_time(long long wall_ns, char *buf, size_t len)
{
    buf[0] = '\0';
    time_t t = (time_t)(wall_ns / 1000000000LL);
    struct tm tm;
    if (wall_ns >= 0 && localtime_r(&t, &tm))
        strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
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
    cli_buf_printf(b, ": %s", esc(f->signal));
    if (f->fault_addr)
        cli_buf_printf(b, " (fault address %s)", esc(f->fault_addr));
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
            cli_buf_printf(b, ", inside kernel '%s'", esc(k));
        else
            cli_buf_printf(b, ", inside %s%s", f->instance ? "tuner " : "a tuner", f->instance ? esc(f->instance) : "");
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
    cli_buf_printf(b, "; file %s\n", esc(f->file));
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
            cli_buf_printf(b, "kernel '%s'", esc(k));
        else
            cli_buf_printf(b, "%s%s", o->instance ? "tuner " : "a tuner", o->instance ? esc(o->instance) : "");
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
    cli_jput_str(b, f->signal);
    if (f->tid >= 0)
        cli_buf_printf(b, ",\"tid\":%ld", f->tid);
    else
        cli_buf_puts(b, ",\"tid\":null");
    cli_buf_puts(b, ",\"fault_addr\":");
    cli_jput_str(b, f->fault_addr);
    cli_buf_puts(b, ",\"kernel\":");
    cli_jput_str(b, f->in_tuner > 0 ? fatal_kernel(st, f, &rs, &ri) : NULL);
    cli_buf_puts(b, ",\"instance\":");
    cli_jput_str(b, f->instance);
    if (f->race_seq >= 0)
        cli_buf_printf(b, ",\"race_seq\":%lld", f->race_seq);
    else
        cli_buf_puts(b, ",\"race_seq\":null");
    if (f->reports_before >= 0)
        cli_buf_printf(b, ",\"reports_before\":%ld", f->reports_before);
    else
        cli_buf_puts(b, ",\"reports_before\":null");
    cli_buf_puts(b, ",\"file\":");
    cli_jput_str(b, f->file);
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

void cli_report_sort(struct state *st)
{
    if (st->nfatals)
        qsort(st->fatals, st->nfatals, sizeof *st->fatals, cmp_fatal);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fputs("tunerguard: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

/* One kernel's entry of the JSON summary: its races, processes, ranks and
 * first race.  vals: scratch of st->nraces longs. */
static void put_kernel_json(struct cli_buf *bp, const struct state *st, const char *kernel, size_t k,
                            const struct race *first, int n, int h, int s, long *vals)
{
    cli_buf_printf(bp, "%s{\"kernel\":", k ? "," : "");
    cli_jput_str(bp, first->unnamed ? NULL : kernel);
    cli_buf_puts(bp, ",\"tuner\":"); /* a tuner without a kernel name: its method */
    cli_jput_str(bp, first->unnamed ? kernel : NULL);
    cli_buf_printf(bp, ",\"races\":%d,\"high\":%d,\"low\":%d,\"serialized\":%d,\"pids\":", n, h, n - h, s);
    put_longs(bp, vals, distinct(st, kernel, 0, vals, st->nraces), 1);
    cli_buf_puts(bp, ",\"ranks\":");
    put_longs(bp, vals, distinct(st, kernel, 1, vals, st->nraces), 1);
    cli_buf_puts(bp, ",\"first\":{\"ts_ns\":");
    if (first->ts >= 0)
        cli_buf_printf(bp, "%lld", first->ts);
    else
        cli_buf_puts(bp, "null");
    char when[32];
    cli_buf_puts(bp, ",\"time\":");
    cli_jput_str(bp, *local_time(first->wall, when, sizeof when) ? when : NULL);
    cli_buf_printf(bp, ",\"pid\":%ld,\"file\":", first->pid);
    cli_jput_str(bp, first->file);
    cli_buf_puts(bp, ",\"location\":");
    cli_jput_str(bp, first->where);
    cli_buf_puts(bp, "}}");
}

/* One kernel's block of the text summary. */
static void put_kernel_text(struct cli_buf *bp, const struct state *st, const char *kernel, const struct race *first,
                            int n, int h, int s, long *vals)
{
    cli_buf_printf(bp, "\n%s '%s'%s: %d race%s (%d high, %d low, %d serialized)\n", first->unnamed ? "tuner" : "kernel",
                   esc(kernel), first->unnamed ? " (no kernel name)" : "", n, n == 1 ? "" : "s", h, n - h, s);
    cli_buf_puts(bp, "  processes: ");
    put_longs(bp, vals, distinct(st, kernel, 0, vals, st->nraces), 0);
    size_t nr = distinct(st, kernel, 1, vals, st->nraces);
    if (nr) { /* no rank: no field */
        cli_buf_puts(bp, "   ranks: ");
        put_longs(bp, vals, nr, 0);
    }
    char when[32];
    cli_buf_puts(bp, "\n  first: ");
    if (*local_time(first->wall, when, sizeof when))
        cli_buf_printf(bp, "%s, ", when);
    cli_buf_printf(bp, "pid %ld in %s\n", first->pid, esc(first->file));
    if (first->where && *first->where)
        cli_buf_printf(bp, "  at: %s\n", esc(first->where));
}

void cli_report_print(const struct state *st, int as_json)
{
    size_t nreports = st->nreports;
    /* kernels in order of first appearance */
    const char **kernels = xcalloc(st->nraces, sizeof *kernels);
    size_t nk = 0;
    for (size_t i = 0; i < st->nraces; i++) {
        size_t j = 0;
        while (j < nk && strcmp(kernels[j], st->races[i].kernel))
            j++;
        if (j == nk)
            kernels[nk++] = st->races[i].kernel;
    }
    struct cli_buf b = {0};
    long *vals = xcalloc(st->nraces, sizeof *vals);
    size_t nproc_r = st->nprocs, nranks = 0;
    long *ranks = xcalloc(st->nprocs, sizeof *ranks);
    struct cli_pairset rankset = {0};
    for (size_t i = 0; i < st->nprocs; i++)
        if (st->procs[i][1] >= 0 && cli_pairset_add(&rankset, (uint64_t)st->procs[i][1], 0))
            ranks[nranks++] = st->procs[i][1];
    cli_pairset_free(&rankset);
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
                       "\"deadlocks\":%d,\"wait_timeouts\":%d,\"waits_proceeded\":%d,"
                       "\"unreadable_lines\":%d,\"copied_records\":%zu,\"incomplete\":%zu,\"kernels\":[",
                       st->nraces, high, st->nraces - (size_t)high, ser, st->replaced, st->deadlocks,
                       st->wait_timeouts, st->waits_proceeded, st->bad_lines, st->dup_records, st->problems);
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
        if (st->deadlocks)
            cli_buf_printf(&b, "; %d cycle%s of serialized waits", st->deadlocks, st->deadlocks == 1 ? "" : "s");
        if (st->wait_timeouts)
            cli_buf_printf(&b, "; %d serialized wait%s past wait_timeout (%d proceeded unserialized)",
                           st->wait_timeouts, st->wait_timeouts == 1 ? "" : "s", st->waits_proceeded);
        if (st->bad_lines)
            cli_buf_printf(&b, "; %d unreadable line%s skipped", st->bad_lines, st->bad_lines == 1 ? "" : "s");
        if (st->dup_records)
            cli_buf_printf(&b, "; %zu record%s in copied files counted once", st->dup_records,
                           st->dup_records == 1 ? "" : "s");
        if (st->problems)
            cli_buf_printf(&b, "; %zu file%s or folder%s not read in full (named on stderr)", st->problems,
                           st->problems == 1 ? "" : "s", st->problems == 1 ? "" : "s");
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
            if (earlier(r, first))
                first = r;
        }
        if (as_json)
            put_kernel_json(&b, st, kernels[k], k, first, n, h, s, vals);
        else
            put_kernel_text(&b, st, kernels[k], first, n, h, s, vals);
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
            cli_jput_str(&b, st->summary[i].s);
            cli_buf_puts(&b, "}");
        }
        cli_buf_puts(&b, "]}\n");
    } else if (st->nsummary) {
        cli_buf_puts(&b, "\n");
        for (size_t i = 0; i < st->nsummary; i++)
            cli_buf_printf(&b, "%4dx %s\n", st->summary[i].n, esc(st->summary[i].s));
    }
    fputs(b.s ? b.s : "", stdout);
    cli_buf_free(&b);
    free(kernels);
    free(vals);
    free(ranks);
    esc_free();
}

