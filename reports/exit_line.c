/* The exit line (reports/exit_line.h): its parts in the order of the report
 * kinds' exit column (core/report_kinds.inc), then the serialized calls, the
 * overlaps on tuned keys, the reports past report_cap and where the reports
 * are. */
#include "reports/exit_line.h"
#include "reports/report.h"
#include "core/log.h"
#include "core/options.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum part { PART_FIRST, PART_LINKED, PART_PREVENTED, PART_LOAD, PART_SERIALIZE };

struct line {
    char buf[900];
    size_t n;
};

static void add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct line *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const size_t room = l->n < sizeof l->buf ? sizeof l->buf - l->n : 0;
    const int w = vsnprintf(l->buf + l->n, room, fmt, ap);
    va_end(ap);
    if (w > 0)
        l->n += (size_t)w;
}

/* The kinds' parts that go at `part`: each written when its `when` holds,
 * its format given the count, "s" unless it is 1, then its arguments. */
static void kind_parts(struct line *l, enum part part, const struct tg_emit_stats *es)
{
#define TG_EXIT_NONE
#define TG_EXIT(part_, when, n, fmt, ...)                                                          \
    if (part == PART_##part_ && (when)) {                                                          \
        unsigned long long c = (n);                                                                \
        add(l, fmt, c, c == 1 ? "" : "s", ##__VA_ARGS__);                                          \
    }
#define TG_REPORT_KIND(ID, json, title, what, body, supp, flags, exit) exit
#include "core/report_kinds.inc"
#undef TG_REPORT_KIND
#undef TG_EXIT
#undef TG_EXIT_NONE
}

void tg_exit_line(const struct tg_exit_facts *f)
{
    const struct tg_emit_stats *es = &f->es;
    if (es->reports == 0 && es->races_seen == 0 && f->waits == 0 && es->prevented_seen == 0)
        return;
    struct line l = {.n = 0};
    for (enum part p = PART_FIRST; p <= PART_LOAD; p++)
        kind_parts(&l, p, es);
    if (f->waits) {
        add(&l, "; %llu call%s serialized, waited %.3f s in total", (unsigned long long)f->waits,
            f->waits == 1 ? "" : "s", (double)f->wait_ns / 1e9);
        if (f->still_waiting)
            add(&l, " (%llu still waiting at exit)", (unsigned long long)f->still_waiting);
        if (f->contended && f->contended[0])
            add(&l, " (contended: %s)", f->contended);
    }
    kind_parts(&l, PART_SERIALIZE, es);
    if (es->overlaps)
        add(&l, "; %llu overlap%s on already tuned keys (low severity%s)", (unsigned long long)es->overlaps,
            es->overlaps == 1 ? "" : "s", tg_opts.verbosity >= 1 ? "" : ", verbosity=1 shows them");
    if (es->capped)
        add(&l, "; %llu more report%s not written (report_cap=%d)", (unsigned long long)es->capped,
            es->capped == 1 ? "" : "s", tg_opts.report_cap);
    const char *path = tg_sink_text_path();
    if (path[0] && es->reports)
        add(&l, "; reports in %s", path);
    /* The parts after the first begin with their joint ("; " or ", "): the
     * line begins with the first part written, without it. */
    const char *s = l.buf;
    if (strncmp(s, "; ", 2) == 0 || strncmp(s, ", ", 2) == 0)
        s += 2;
    tg__warn("%s", s);
}
