/* The exit line: one line that sums up what tunerguard reported and what
 * serialize did.  The guard gathers the facts at exit (guard/exit_summary.c);
 * this writer turns them into the line. */
#ifndef TG_EXIT_LINE_H
#define TG_EXIT_LINE_H

#include "reports/emit.h"

#include <stdint.h>

struct tg_exit_facts {
    struct tg_emit_stats es;  /* what was reported; overlaps: the tuners' counts added */
    uint64_t waits;           /* serialized calls, those still waiting at exit included */
    uint64_t wait_ns;         /* the time they waited, until now for those still waiting */
    uint64_t still_waiting;   /* calls still waiting at exit */
    const char *contended;    /* the kernels waited for, as the guard lists them; "" none */
};

/* Writes the line (tg__warn) when something was reported or serialize
 * changed what the program did (a serialized call); low-severity overlaps
 * alone are the normal life of a tuned kernel called from several threads
 * and say nothing.  Reads tg_opts and the sink's path.  Any thread; stdio. */
void tg_exit_line(const struct tg_exit_facts *f);

#endif
