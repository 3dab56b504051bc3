/* The report pipeline: how every report leaves tunerguard.  The model is
 * compiler-rt's split between tsan_rtl_report.cpp (decide, suppress, dedupe,
 * count, halt) and tsan_report.cpp (print): capture (guard/report_capture.c,
 * cuda/cuda_stress.c) fills a struct tg_report and hands it to tg_emit(); the
 * writers (reports/text_report.c, jsonl_report.c, through the sink) only
 * print it.  What a kind gets here is its row's flags (core/report_kinds.inc).
 *
 *     r = tg_report_begin(t);      the report lock, t busy, a zeroed record
 *     ... fill r (may call Python) ...
 *     tg_emit(r, &status);         suppress, dedupe, count, seq, write, halt
 *     tg_report_end(t);
 *
 * Counters and the sequence number are atomic: an interference report can be
 * emitted without the GIL and without the report lock (cuda/cuda_stress.c),
 * and the fatal-signal path takes its seq from the same counter
 * (tg_emit_seq_counter). */
#ifndef TG_EMIT_H
#define TG_EMIT_H

#include "core/report_record.h"
#include "core/thread_state.h"

#include <stdint.h>

/* Serializes the filling and writing of reports.  Filling a report calls
 * Python (names, frames) and so can let other threads run: the GIL alone does
 * not keep two reports apart.  tg_report_lock() takes the lock without ever
 * blocking while holding the GIL (it releases the GIL while it waits), so a
 * reporter that gave up the GIL mid-report can always finish.  GIL held on
 * entry and exit of both.  Not for signal handlers. */
void tg_report_lock(void);
void tg_report_unlock(void);

/* The report lock, t->busy raised (t's own CUDA calls and guarded calls pass
 * through meanwhile), and the one shared record, zeroed.  GIL held.  Pair
 * with tg_report_end(t). */
struct tg_report *tg_report_begin(struct tg_thread *t);
void tg_report_end(struct tg_thread *t);

/* The head every report has: its kind, this process (pid, rank), the mode,
 * and now as its ts_ns.  The rest of r is the caller's.  Allocates nothing;
 * not for signal handlers (tg_proc_rank reads the environment once). */
void tg_report_head(struct tg_report *r, enum tg_report_kind kind);

enum tg_emit_status {
    TG_EMIT_WRITTEN,    /* written: the return value is its seq */
    TG_EMIT_SUPPRESSED, /* a suppressions= line matched: not written, not counted */
    TG_EMIT_HIDDEN,     /* low severity at verbosity 0: counted as an overlap only */
    TG_EMIT_REPEAT,     /* a repeat of one written before (TG_KIND_DEDUP) */
    TG_EMIT_CAPPED,     /* past report_cap: counted (and halts, fails the run) as one
                           written, but not written */
};

/* Emit report r (filled; r->seq is set here).  In order: the suppressions of
 * its kind; severity (TG_KIND_SEVERITY); de-duplication (TG_KIND_DEDUP); the
 * counts (TG_KIND_PREVENTED apart); the seq; the sink (text and JSON Lines);
 * the trace (TG_KIND_TRACE); and, when its kind's halt option is on (not for
 * a prevented race), the halt (tg_emit_set_halt), which
 * does not return.  Returns the seq, 0 when not written (*status says why;
 * status may be NULL).  GIL held with the report lock, or (interference only)
 * neither, serialized by the caller. */
uint64_t tg_emit(struct tg_report *r, enum tg_emit_status *status);

/* A report like one tg_emit was given before, decided without capturing it:
 * counted as tg_emit counts a repeat of that one (ref: the earlier report's
 * dedup_ref, set by tg_emit; its slot's repeats, written at exit).  GIL held
 * (no report lock needed). */
void tg_emit_again(uint32_t ref, enum tg_report_kind kind, int high, int serialized);

/* A low-severity overlap not worth capturing (verbosity 0 and the other
 * thread not tuning): counted only. */
void tg_emit_count_overlap(void);

/* What halts the process after a report whose kind says so (halt_on_race,
 * deadlock=abort); it must not return.  Unset: _exit(exitcode, else 66). */
void tg_emit_set_halt(void (*halt)(void));

struct tg_emit_stats {
    uint64_t written[TG_REPORT_NKINDS]; /* written, per kind (races: high severity only) */
    uint64_t seen[TG_REPORT_NKINDS];    /* not suppressed, per kind, repeats included */
    uint64_t failing;      /* written reports that fail the run (tg_report_fails): exitcode= */
    uint64_t races_seen;   /* high-severity races seen, repeats included (prevented ones aside) */
    uint64_t prevented;    /* serialize: high-severity races a wait prevented, written (TG_KIND_PREVENTED) */
    uint64_t prevented_seen;    /* ... repeats included */
    uint64_t prevented_reports; /* reports of prevented races or overlaps (any severity): they
                                   leave exitcode= alone unless prevented_is_race=1 */
    uint64_t repeat_records; /* "repeats" records written at exit: they follow a report that
                                counted or not, and leave exitcode= alone themselves */
    uint64_t overlaps;     /* low-severity overlaps (already tuned key) */
    uint64_t reports;      /* reports written, all kinds, fatal records too: the last seq */
    uint64_t capped;       /* reports not written past report_cap (repeats aside) */
    uint64_t load_kernels; /* kernels, by name, with a tuning-under-load report */
};
void tg_emit_stats(struct tg_emit_stats *out);

/* The sequence counter, for the fatal-signal path (tg_fatal_set_context):
 * updated with __atomic builtins only. */
uint64_t *tg_emit_seq_counter(void);

/* fork child: the parent's reports are the parent's (counts, repeats). */
void tg_emit_atfork_child(void);

/* At exit: one "repeats" record (text line and JSON object) for each race
 * report that was seen again; no lock (one thread left), no Python. */
void tg_emit_flush_repeats(void);

#endif
