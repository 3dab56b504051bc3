/* Internal to the text report (reports/text_report.c: the races and the
 * shared pieces; reports/text_kinds.c: the entry, the other kinds and
 * their sentences).  Async-signal-safe, never allocate, read the report only. */
#ifndef TG_TEXT_INTERNAL_H
#define TG_TEXT_INTERNAL_H

#include "reports/report.h"
#include "reports/report_internal.h"
#include "reports/writer.h"

/* Every string from the program (names, paths, messages) goes through
 * tg_w_text: control bytes escaped, so none can forge a line. */
#define W_FIELD(w, field) tg_w_text((w), (field), TG__FIELD_SIZE(field))
/* A fixed-size field, or dflt when it is empty. */
#define W_FIELD_OR(w, field, dflt) \
    ((field)[0] ? tg_w_text((w), (field), TG__FIELD_SIZE(field)) : tg_w_str((w), (dflt)))

/* The fence and "WARNING: tunerguard: WHAT (pid=..., rank=...)". */
void tg__text_header(struct tg_w *w, const struct tg_report *r, const char *what);
/* "SUMMARY: tunerguard: WHAT on 'K' in M FILE:LINE in F" and the fence. */
void tg__text_summary(struct tg_w *w, const struct tg_report *r, const char *what);
/* "thread 'NAME' (tid=N)" or "thread tid=N". */
void tg__text_thread_name(struct tg_w *w, const struct tg_thread_view *v);
/* v's Python stack, folded; its native stack where it adds a frame. */
void tg__text_python_stack(struct tg_w *w, const struct tg_report *r, const struct tg_thread_view *v);
void tg__text_native_stack(struct tg_w *w, const struct tg_thread_view *v);
/* " on device N", or " on an unknown device". */
void tg__text_device_words(struct tg_w *w, int device);
/* "    Last CUDA call: ..." of v; "    No CUDA call yet; on device N ..." */
void tg__text_cuda_line(struct tg_w *w, const struct tg_report *r, const struct tg_thread_view *v);
void tg__text_entry_device_line(struct tg_w *w, const struct tg_thread_view *v);

/* The bodies of the kinds, one per body column of core/report_kinds.inc. */
#define TG_REPORT_KIND(ID, json, title, what, body, supp, flags, exit) \
    void tg__text_##body(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k);
#include "core/report_kinds.inc"
#undef TG_REPORT_KIND

#endif
