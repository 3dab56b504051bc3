/* The writers that turn a report (struct tg_report, core/report_record.h)
 * into text (ThreadSanitizer-shaped) and JSON Lines, and the sink.
 *
 * Capture (guard/, GIL held) fills a struct tg_report; the writers only read
 * it.  All strings are fixed-size buffers inside the struct, so writing never
 * allocates.  The writers use write(2) and hand-formatted numbers only: they
 * are async-signal-safe, so the fatal-signal path can use them too. */
#ifndef TG_REPORT_H
#define TG_REPORT_H

#include <stdint.h>
#include <sys/types.h>
#include "core/report_record.h"

/* Resolve the native frames of both thread views into native_sym[] (see
 * tg_thread_view), and demangle the C++ names of frames and CUDA kernels
 * (reports/demangle.h: the mangled ones kept in their *_mangled fields).  Slow (reads symbol tables), allocates, takes a lock: call
 * outside signal context, before the writers.  tg_sink_emit() calls it on
 * its own copy of the report, so callers of the sink need not. */
void tg_report_symbolize(struct tg_report *r);
/* The symbolize= option (2 names and file:line, 1 names, 0 module+offset);
 * call before any report is written. */
void tg_report_set_symbolize(int level);

/* Text block, ThreadSanitizer-shaped: fence, WARNING header, one block per
 * thread, SUMMARY line, fence.  Signal-safe; returns 0, or -1 if a write failed. */
int tg_report_write_text(int fd, const struct tg_report *r);

/* The note an exception report puts on the exception (PEP 678), into buf:
 * "tunerguard: <the sentence that links it to the race>; see <text_path>"
 * (text_path "" or NULL: "the report"), cut to n.  The sentence is the text
 * report's own (reports/text_kinds.c).  stdio: report time, under the
 * report lock; not for signal handlers. */
void tg_report_exception_note(const struct tg_report *r, const char *text_path, char *buf, size_t n);

/* One JSON object on one line (schema: docs/report-schema.md).  Signal-safe;
 * returns 0, or -1 if a write failed. */
int tg_report_write_jsonl(int fd, const struct tg_report *r);

/* The report sink: creates <stem>.<id>.txt and .jsonl (core/process.h:
 * the stem from log_path, set by tg_proc_configure) on the first report
 * (never before), writes both, and falls back to stderr with one warning line
 * when the files cannot be created or written.  log_path "stderr" writes the
 * text to stderr only.  Not signal-safe on first use (opens files). */
int tg_sink_emit(const struct tg_report *r);
/* The path of the text report ("" before the first report, "stderr" when the
 * reports went there). */
const char *tg_sink_text_path(void);
/* After fork in the child: forget open files, the next report opens new ones. */
void tg_sink_atfork_child(void);
/* For the fatal-signal path: the descriptors reports go to right now, without
 * opening anything.  *txt_fd is the text file, 2 when text goes to stderr, or
 * -1 when no report was emitted yet in this process (the handler then writes
 * to stderr); *jsonl_fd is the JSON Lines file or -1.  Async-signal-safe
 * (reads two ints; no lock). */
void tg_sink_signal_fds(int *txt_fd, int *jsonl_fd); /* jsonl -2: turned off after a failure */

#endif
