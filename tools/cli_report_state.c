/* tunerguard report: the state of what was read (cli_report.h): growing
 * arrays, the processes, races, fatal records and SUMMARY lines added, and
 * the records already counted (a copy of a file is read as a file, its
 * records counted once). */
#include "cli_report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t cap_races, cap_fatals, cap_summary;

void *cli_grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    p = realloc(p, c * size);
    if (!p) {
        fputs("tunerguard: out of memory\n", stderr);
        exit(1);
    }
    *cap = c;
    return p;
}

void cli_note_proc(struct state *st, long pid, long rank)
{
    if (!cli_pairset_add(&st->procset, (uint64_t)pid, (uint64_t)rank))
        return;
    st->procs = cli_grow(st->procs, &st->capprocs, st->nprocs + 1, sizeof *st->procs);
    st->procs[st->nprocs][0] = pid;
    st->procs[st->nprocs][1] = rank;
    st->nprocs++;
}

void cli_add_race(struct state *st, struct race r)
{
    st->races = cli_grow(st->races, &cap_races, st->nraces + 1, sizeof *st->races);
    st->races[st->nraces++] = r;
}

void cli_add_fatal(struct state *st, struct fatal f)
{
    st->fatals = cli_grow(st->fatals, &cap_fatals, st->nfatals + 1, sizeof *st->fatals);
    st->fatals[st->nfatals++] = f;
}

char *cli_dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void cli_add_summary(struct state *st, const char *line, size_t len)
{
    for (size_t i = 0; i < st->nsummary; i++)
        if (st->summary[i].len == len && !memcmp(st->summary[i].s, line, len)) {
            st->summary[i].n++;
            return;
        }
    st->summary = cli_grow(st->summary, &cap_summary, st->nsummary + 1, sizeof *st->summary);
    st->summary[st->nsummary].s = strndup(line, len);
    st->summary[st->nsummary].len = len;
    st->summary[st->nsummary++].n = 1;
}

void cli_free_state(struct state *st)
{
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
    free(st->procs);
    cli_pairset_free(&st->procset);
    cli_pairset_free(&st->seen);
    cli_pairset_free(&st->records);
    cli_buf_free(&st->trace.out);
    free(st->explicit_files);
    free(st);
}

int cli_record_seen(struct state *st, long long pid, long long rank, long long seq, long long ts_ns)
{
    if (seq < 0 || ts_ns < 0)
        return 0;
    uint64_t proc = (uint64_t)(uint32_t)pid << 32 | (uint32_t)rank;
    uint64_t rec = ((uint64_t)ts_ns * 0x9E3779B97F4A7C15ull) ^ (uint64_t)seq; /* ts_ns alone tells them apart */
    return !cli_pairset_add(&st->records, proc, rec);
}
