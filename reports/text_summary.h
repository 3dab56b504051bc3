/* The text report's first lines after WARNING for a race: what happened, in
 * the words of a person training a model (the kernel, the tuner, the two
 * threads and the line of the program each came from), what it does, and
 * what to do.  Async-signal-safe; never allocates; reads the report only. */
#ifndef TG_TEXT_SUMMARY_H
#define TG_TEXT_SUMMARY_H

#include "reports/report.h"
#include "reports/writer.h"

void tg__text_race_summary(struct tg_w *w, const struct tg_report *r);

/* A race seen at a return (seen_at_exit): did the returning call (inside)
 * enter before the benchmarking one (entering)?  Either may: two calls that
 * entered together, neither tuning yet. */
static inline int tg__text_returned_first(const struct tg_report *r)
{
    return !r->entering.entered_ns || !r->inside.entered_ns || r->inside.entered_ns <= r->entering.entered_ns;
}

#endif
