/* tunerguard report: the records of a .jsonl file (docs/report-schema.md),
 * of this tunerguard's schema (TG_REPORT_SCHEMA_VERSION) and every older
 * one: races, fatal signals and serialize's own reports counted into the
 * state; a file with records of a newer schema refused by name. */
#include "cli_report.h"
#include "cli_json.h"

#include "reports/report.h" /* TG_REPORT_SCHEMA_VERSION: the newest schema read here */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static long long jint(const json_t *o, const char *key, long long def)
{
    return cli_jint(json_object_get(o, key), def);
}

/* The "fatal" record V (a JSON object) of file PATH. */
static void add_fatal_record(struct state *st, const json_t *v, const char *path, long pid, long rank)
{
    const json_t *tuner = json_object_get(v, "tuner"), *tuners = json_object_get(v, "tuners");
    const char *sig = jstr(v, "signal");
    char signame[32];
    if (!sig) {
        snprintf(signame, sizeof signame, "signal %lld", jint(v, "signo", 0));
        sig = signame;
    }
    struct fatal f = {.pid = pid, .rank = rank,
                      .seq = jint(v, "seq", -1),
                      .signal = strdup(sig),
                      .tid = (long)jint(v, "tid", -1),
                      .fault_addr = cli_dup_or_null(jstr(v, "fault_addr")),
                      .in_tuner = json_is_object(tuner),
                      .instance = cli_dup_or_null(jstr(tuner, "instance")),
                      .kernel = cli_dup_or_null(jstr(tuner, "kernel")),
                      .race_seq = jint(v, "race_seq", -1),
                      .reports_before = (long)jint(v, "reports_before", -1),
                      .file = strdup(path)};
    size_t cap = 0;
    for (size_t i = 0; i < json_array_size(tuners); i++) {
        const json_t *t = json_array_get(tuners, i);
        const char *inst = jstr(t, "instance");
        const json_t *occ = json_object_get(t, "occupants");
        for (size_t j = 0; j < json_array_size(occ); j++) {
            const json_t *o = json_array_get(occ, j);
            long long rs = jint(o, "race_seq", -1);
            if (rs < 0)
                continue;
            f.occ = cli_grow(f.occ, &cap, f.nocc + 1, sizeof *f.occ);
            f.occ[f.nocc++] = (struct occupant){.tid = (long)jint(o, "tid", -1), .race_seq = rs,
                                                .instance = cli_dup_or_null(inst)};
        }
    }
    cli_add_fatal(st, f);
}

/* One record of a .jsonl file. */
static int add_record(struct state *st, const json_t *v, const char *path)
{
    const char *kind = jstr(v, "kind");
    if (!kind || !json_is_integer(json_object_get(v, "pid"))) {
        if (!st->said_malformed++)
            cli_report_problem(st, path, "a record without %s; skipped (later ones are counted, not named)",
                    !kind ? "a kind" : "a pid");
        else
            st->problems++;
        return 0;
    }
    if (strcmp(kind, "fatal") != 0 && tg_report_kind_of_json(kind) == TG_REPORT_NKINDS) {
        /* a newer library's kind: skipped, as docs/report-schema.md asks */
        if (!st->said_unknown_kind++)
            cli_errf("%s: records of kind '%s', unknown to this tunerguard, skipped (read them with a newer one)",
                     path, kind);
        st->other++;
        return 0;
    }
    long pid = (long)jint(v, "pid", 0);
    long rank = (long)jint(v, "rank", -1);
    cli_note_proc(st, pid, rank);
    const char *severity = jstr(v, "severity");
    if (strcmp(kind, "fatal") != 0) /* exitcode='s rule; a fatal record is counted apart */
        st->failing += (size_t)tg_report_fails(tg_report_kind_of_json(kind),
                                               json_is_true(json_object_get(v, "serialized")),
                                               severity && strcmp(severity, "low") == 0, 0);
    if (kind && strcmp(kind, "race") == 0) {
        const json_t *tuner = json_object_get(v, "tuner"), *loc = json_object_get(v, "location");
        const char *k = jstr(tuner, "kernel");
        const int unnamed = !k || !*k || !strcmp(k, "?");
        if (unnamed) /* the tuner then, by its method or class */
            k = jstr(tuner, "method") ? jstr(tuner, "method") : jstr(tuner, "class");
        const char *sev = jstr(v, "severity");
        char where[1024] = "";
        if (json_is_object(loc) && jstr(loc, "file")) { /* what is known of it, never a '?' */
            int n = snprintf(where, sizeof where, "%s", jstr(loc, "file"));
            if (jint(loc, "line", 0) > 0 && n >= 0 && (size_t)n < sizeof where)
                n += snprintf(where + n, sizeof where - (size_t)n, ":%lld", jint(loc, "line", 0));
            if (jstr(loc, "func") && n >= 0 && (size_t)n < sizeof where)
                snprintf(where + n, sizeof where - (size_t)n, " in %s", jstr(loc, "func"));
        }
        cli_add_race(st, (struct race){.kernel = strdup(k ? k : "an unnamed tuner"), .unnamed = unnamed,
                                       .wall = jint(v, "wall_ns", -1),
                                       .high = !(sev && !strcmp(sev, "low")), /* as the exit rule reads it */
                                       .serialized = json_is_true(json_object_get(v, "serialized")),
                                       .pid = pid, .rank = rank,
                                       .ts = jint(v, "ts_ns", -1),
                                       .seq = jint(v, "seq", -1),
                                       .instance = cli_dup_or_null(jstr(tuner, "instance")),
                                       .file = strdup(path), .where = strdup(where)});
    } else if (kind && strcmp(kind, "method_replaced") == 0) {
        st->replaced++;
    } else if (strcmp(kind, "deadlock") == 0) {
        st->deadlocks++;
    } else if (strcmp(kind, "wait_timeout") == 0) {
        st->wait_timeouts++;
        /* schema 2: the "proceeds" field; schema 1 had only the sentence */
        const json_t *proceeds = json_object_get(v, "proceeds");
        const char *detail = jstr(v, "detail");
        st->waits_proceeded += json_is_boolean(proceeds) ? json_is_true(proceeds)
                                                         : detail && strstr(detail, "proceeds unserialized") != NULL;
    } else if (kind && strcmp(kind, "fatal") == 0) {
        add_fatal_record(st, v, path, pid, rank);
        return 1;
    } else {
        st->other++;
    }
    return 0;
}

/* The records of a .jsonl file.  Returns the number of "fatal" records, or
 * -1 when the file was refused (a newer schema).  Lines that are not records
 * are counted and the file named once, saying how many and whether the last
 * one was cut short. */
int cli_read_jsonl(struct state *st, const char *path, const char *text, size_t len)
{
    json_t **recs = NULL;
    size_t nrecs = 0, cap = 0, bad = 0, first_bad = 0, lineno = 0;
    int cut = 0;
    long long newest = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        if (cli_jws(p, le) < le) {
            json_error_t err;
            json_t *v = json_loadb(p, (size_t)(le - p), 0, &err);
            const json_t *schema = json_object_get(v, "schema");
            if (!json_is_object(v) || !json_is_integer(schema) || json_integer_value(schema) < 1) {
                /* The last line, ending before its value does: the writer
                 * was stopped (it writes a record and its newline at once). */
                if (!v && json_error_code(&err) == json_error_premature_end_of_input && cli_jws(le, end) == end)
                    cut = 1;
                else if (!bad++)
                    first_bad = lineno;
                json_decref(v);
            } else {
                if (json_integer_value(schema) > newest)
                    newest = json_integer_value(schema);
                recs = cli_grow(recs, &cap, nrecs + 1, sizeof *recs);
                recs[nrecs++] = v;
            }
        }
        p = nl ? nl + 1 : end;
    }
    int nfatal = 0;
    st->copy_file = 0;
    st->jsonl_records = nrecs;
    if (newest > TG_REPORT_SCHEMA_VERSION) {
        cli_report_problem(st, path, "written with report schema %lld; this tunerguard reads schema %d and older: file skipped "
                "(read it with a newer tunerguard)", newest, TG_REPORT_SCHEMA_VERSION);
        nfatal = -1;
    } else {
        size_t copies = 0;
        for (size_t i = 0; i < nrecs; i++) {
            const json_t *v = recs[i];
            if (cli_record_seen(st, jint(v, "pid", 0), jint(v, "rank", -1), jint(v, "seq", -1), jint(v, "ts_ns", -1)))
                copies++; /* a copy of a record read before: counted once */
            else
                nfatal += add_record(st, v, path);
        }
        st->dup_records += copies;
        st->copy_file = nrecs && copies == nrecs;
        st->bad_lines += (int)(bad + (size_t)cut);
        if (cut && bad)
            cli_report_problem(st, path, "truncated (its last line is cut short) and %zu other line%s not a record (first: "
                    "line %zu); %zu record%s read", bad, bad == 1 ? " is" : "s are", first_bad, nrecs,
                    nrecs == 1 ? "" : "s");
        else if (cut)
            cli_report_problem(st, path, "truncated: its last line is cut short (the process stopped while writing it?); "
                    "%zu record%s read", nrecs, nrecs == 1 ? "" : "s");
        else if (bad)
            cli_report_problem(st, path, "%zu line%s not a record (first: line %zu), skipped; %zu record%s read", bad,
                    bad == 1 ? " is" : "s are", first_bad, nrecs, nrecs == 1 ? "" : "s");
    }
    for (size_t i = 0; i < nrecs; i++)
        json_decref(recs[i]);
    free(recs);
    return nfatal;
}
