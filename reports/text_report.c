/* The text report: ThreadSanitizer-shaped, one block per thread, stable and
 * greppable (tests/unit/expected/ holds the exact shape).  Here: a race,
 * and the pieces every kind shares (reports/text_internal.h); the other
 * kinds and the entry are reports/text_kinds.c.  A race opens with
 * its summary (reports/text_summary.h); stacks are folded
 * (reports/stack_fold.h), the JSON Lines record keeps them whole; every
 * string from the program is escaped (tg_w_text).
 *
 * Contract: async-signal-safe (write(2) through reports/writer.c, hand
 * formatted numbers, bounded strings); never allocates; reads the report
 * only.  Symbols come from tg_report_symbolize() when it ran; otherwise raw
 * addresses. */
#include <string.h>

#include "core/py_api.h"
#include "core/thread_hold.h"
#include "reports/report.h"
#include "reports/report_internal.h"
#include "reports/stack_fold.h"
#include "reports/text_internal.h"
#include "reports/text_summary.h"
#include "reports/writer.h"

#define FENCE "==================\n"
void tg__text_thread_name(struct tg_w *w, const struct tg_thread_view *v)
{
    if (v->name[0]) {
        tg_w_str(w, "thread '");
        W_FIELD(w, v->name);
        tg_w_str(w, "' (tid=");
    } else { /* no Python name (a thread not started by threading, or gone) */
        tg_w_str(w, "thread (tid=");
    }
    tg_w_i64(w, v->tid);
    tg_w_char(w, ')');
}

/* "func  file:line" of one Python frame. */
static void py_frame(struct tg_w *w, const struct tg_py_frame *f)
{
    W_FIELD(w, f->func);
    tg_w_str(w, "  ");
    W_FIELD(w, f->file);
    tg_w_char(w, ':');
    tg_w_i64(w, f->line);
}

/* The basename of a frame's file, for a folded run's line. */
static void base_name(struct tg_w *w, const struct tg_py_frame *f)
{
    size_t len = strnlen(f->file, sizeof f->file), b = len;
    while (b > 0 && f->file[b - 1] != '/')
        b--;
    tg_w_text(w, f->file + b, len - b);
}

/* "#A-#B [N frames of import machinery, importing x.py ... y.py]" or
 * "#A-#B [N library frames: x.py ... y.py]" */
static void fold_run(struct tg_w *w, const struct tg_thread_view *v, const struct tg_fold_line *l)
{
    int a = l->first, b = l->first + l->count - 1;
    tg_w_str(w, "      #");
    tg_w_u64(w, (uint64_t)a);
    tg_w_str(w, "-#");
    tg_w_u64(w, (uint64_t)b);
    tg_w_str(w, " [");
    tg_w_u64(w, (uint64_t)l->count);
    if (l->kind == TG_FOLD_IMPORT) {
        tg_w_str(w, " frames of import machinery");
        while (a <= b && strcmp(v->py[a].func, "<module>") != 0)
            a++;
        while (b >= a && strcmp(v->py[b].func, "<module>") != 0)
            b--;
        if (a > b) {
            tg_w_char(w, ']');
            return;
        }
        tg_w_str(w, ", importing ");
    } else {
        tg_w_str(w, " library frames: ");
    }
    base_name(w, &v->py[a]);
    if (b != a) {
        tg_w_str(w, " ... ");
        base_name(w, &v->py[b]);
    }
    tg_w_char(w, ']');
}

static void fold_line(struct tg_w *w, const struct tg_thread_view *v, const struct tg_fold_line *l)
{
    switch (l->kind) {
    case TG_FOLD_FRAME:
        tg_w_str(w, "      #");
        tg_w_u64(w, (uint64_t)l->first);
        tg_w_char(w, ' ');
        py_frame(w, &v->py[l->first]);
        break;
    case TG_FOLD_REPEAT:
        tg_w_str(w, "      [previous line repeated ");
        tg_w_u64(w, (uint64_t)l->count);
        tg_w_str(w, l->count == 1 ? " more time]" : " more times]");
        break;
    case TG_FOLD_IMPORT:
    case TG_FOLD_LIBRARY:
        fold_run(w, v, l);
        break;
    case TG_FOLD_OMITTED:
        tg_w_str(w, "      [");
        tg_w_u64(w, (uint64_t)l->count);
        tg_w_str(w, " frames not captured]");
        break;
    }
    tg_w_char(w, '\n');
}

/* Folded (reports/stack_fold.h): the JSON Lines record has every frame. */
void tg__text_python_stack(struct tg_w *w, const struct tg_report *r, const struct tg_thread_view *v)
{
    struct tg_fold_line lines[TG_MAX_PY_FRAMES + 1];
    int n = tg_py_fold(r, v, lines, TG_MAX_PY_FRAMES + 1);
    tg_w_str(w, "    Python (most recent call first):\n");
    if (v->py_at_entry)
        tg_w_str(w, "      <not read: the thread ran on, parked in no CUDA call and no wait of tunerguard's within "
                    TG_HOLD_BOUND_TEXT "; shown where it entered the tuner>\n");
    if (n == 0 && v->py_unreadable)
        tg_w_str(w, "      <not readable: the interpreter was finalizing and had released this thread's state>\n");
    else if (n == 0 && !v->py_at_entry)
        tg_w_str(w, "      <no Python frame>\n");
    for (int i = 0; i < n; i++)
        fold_line(w, v, &lines[i]);
    if (v->py_truncated && v->py_omitted == 0)
        tg_w_str(w, "      <truncated>\n");
}

/* One native frame: "func+0xoff file:line (module+0xoff)" when the source
 * line is known, the symbol alone otherwise, the raw address when not
 * symbolized. */
static void native_frame(struct tg_w *w, const struct tg_thread_view *v, void *const *frames, int i)
{
    if (!(i < v->nsym && v->native_sym[i][0])) {
        tg_w_hex(w, (uintptr_t)frames[i]);
        return;
    }
    const char *s = v->native_sym[i];
    size_t len = strnlen(s, sizeof v->native_sym[i]), cut = len;
    for (size_t k = 0; k + 1 < len; k++)
        if (s[k] == ' ' && s[k + 1] == '(')
            cut = k;       /* the last " (module+0x...)" */
    if (v->native_line[i] <= 0 || !v->native_file[i][0] || cut == len) {
        tg_w_text(w, s, len);
        return;
    }
    tg_w_text(w, s, cut);
    tg_w_char(w, ' ');
    W_FIELD(w, v->native_file[i]);
    tg_w_char(w, ':');
    tg_w_i64(w, v->native_line[i]);
    tg_w_text(w, s + cut, len - cut);
}

/* The native stack with each run of interpreter frames as one line; only
 * where it holds a frame the Python stack lacks (an extension module, the
 * driver, a hook), otherwise one line.  The JSON Lines record has every
 * frame and the mixed view. */
void tg__text_native_stack(struct tg_w *w, const struct tg_thread_view *v)
{
    const char *where;
    int n, adds = 0;
    void *const *frames = tg__view_native(v, &n, &where);
    int tail = tg_native_start_tail(v, n);
    for (int i = 0; i < tail; i++)
        adds |= tg_native_adds(v, i);
    if (n == 0)
        return;
    tg_w_str(w, "    Native (");
    if (where[0]) {
        tg_w_strn(w, where, sizeof v->native_where);
    } else {
        tg_w_str(w, "in ");
        W_FIELD_OR(w, v->cuda_fn, "CUDA call");
    }
    if (!adds) {
        tg_w_str(w, "): ");
        tg_w_u64(w, (uint64_t)n);
        tg_w_str(w, " frames, the interpreter's and the guard's: nothing beyond the Python stack\n");
        return;
    }
    tg_w_str(w, "):\n");
    for (int i = 0; i < n;) {
        int j = i, guard = 0;
        for (; j < n && (j >= tail || !tg_native_adds(v, j)); j++)
            guard |= tg_native_guard(v, j);
        if (j - i >= 2) {
            tg_w_str(w, "      [");
            tg_w_u64(w, (uint64_t)(j - i));
            tg_w_str(w, guard ? " interpreter and guard frames]\n" : " interpreter frames]\n");
            i = j;
            continue;
        }
        tg_w_str(w, "      #");
        tg_w_u64(w, (uint64_t)i);
        tg_w_char(w, ' ');
        native_frame(w, v, frames, i);
        tg_w_char(w, '\n');
        i++;
    }
}

/* " on device N", or " on an unknown device" (a negative number). */
void tg__text_device_words(struct tg_w *w, int device)
{
    if (device < 0) {
        tg_w_str(w, " on an unknown device");
        return;
    }
    tg_w_str(w, " on device ");
    tg_w_i64(w, device);
}

/* A thread with no CUDA call yet: the device it entered the tuner on. */
void tg__text_entry_device_line(struct tg_w *w, const struct tg_thread_view *v)
{
    tg_w_str(w, "    No CUDA call yet; on device ");
    tg_w_i64(w, v->entry_device);
    tg_w_str(w, " when it entered the tuner\n");
}

void tg__text_cuda_line(struct tg_w *w, const struct tg_report *r, const struct tg_thread_view *v)
{
    const struct tg_cuda_call *c = &v->cuda;
    tg_w_str(w, "    Last CUDA call: ");
    if (v->cuda_fn[0]) {
        W_FIELD(w, v->cuda_fn);
    } else {
        tg_w_str(w, "driver function #");
        tg_w_u64(w, c->fn);
    }
    tg__text_device_words(w, c->device);
    if (strncmp(v->cuda_fn, "cuCtxSynchronize", 16) == 0) {
        tg_w_str(w, " (all its streams)"); /* context-wide: no stream of its own */
    } else {
        tg_w_str(w, " stream ");
        tg_w_hex(w, c->stream);
    }
    if (v->cuda_kernel[0]) {
        tg_w_str(w, " kernel '");
        W_FIELD(w, v->cuda_kernel);
        tg_w_char(w, '\'');
    } else if (c->func) {
        tg_w_str(w, " function ");
        tg_w_hex(w, c->func);
    }
    if (c->inside) {
        /* a free-threaded build may run without a GIL to release */
        tg_w_str(w, tg_py.free_threaded ? ", still inside it\n" : ", still inside it (GIL released)\n");
    } else {
        tg_w_str(w, ", returned");
        if (c->t_exit && r->ts_ns >= c->t_exit) {
            tg_w_char(w, ' ');
            tg_w_duration(w, r->ts_ns - c->t_exit);
            tg_w_str(w, " earlier");
        }
        tg_w_char(w, '\n');
    }
}

/* "M on kernel 'K' (CLASS at 0x..)"; the kernel left out where the tuner
 * names none. */
static void tuner_line(struct tg_w *w, const struct tg_report *r)
{
    W_FIELD_OR(w, r->method, "?");
    if (r->kernel[0] && !(r->kernel[0] == '?' && r->kernel[1] == '\0')) {
        tg_w_str(w, " on kernel '");
        W_FIELD(w, r->kernel);
        tg_w_char(w, '\'');
    }
    tg_w_str(w, " (");
    W_FIELD_OR(w, r->tuner_class, "?");
    tg_w_str(w, " at ");
    tg_w_hex(w, r->instance);
    tg_w_char(w, ')');
}

void tg__text_header(struct tg_w *w, const struct tg_report *r, const char *what)
{
    tg_w_str(w, FENCE "WARNING: tunerguard: ");
    if (r->serialized && r->kind == TG_REPORT_RACE)
        tg_w_str(w, "race prevented (serialize): ");
    tg_w_str(w, what);
    tg_w_str(w, " (pid=");
    tg_w_i64(w, r->pid);
    if (r->rank >= 0) {
        tg_w_str(w, ", rank=");
        tg_w_i64(w, r->rank);
    }
    tg_w_str(w, ")\n");
}

void tg__text_summary(struct tg_w *w, const struct tg_report *r, const char *what)
{
    tg_w_str(w, "SUMMARY: tunerguard: ");
    tg_w_str(w, what);
    if (r->serialized && r->kind == TG_REPORT_RACE)
        tg_w_str(w, " prevented (serialize)");
    if (r->kernel[0] && !(r->kernel[0] == '?' && r->kernel[1] == '\0')) { /* "?": unknown, the method says which */
        tg_w_str(w, " on '");
        W_FIELD(w, r->kernel);
        tg_w_char(w, '\'');
    }
    if (r->method[0]) {
        tg_w_str(w, " in ");
        W_FIELD(w, r->method);
    }
    int i = tg_summary_frame(r);
    if (i >= 0) {
        const struct tg_py_frame *f = &r->entering.py[i];
        tg_w_str(w, r->method[0] ? " " : " at ");
        W_FIELD(w, f->file);
        tg_w_char(w, ':');
        tg_w_i64(w, f->line);
        tg_w_str(w, " in ");
        W_FIELD(w, f->func);
    }
    tg_w_str(w, "\n" FENCE);
}

/* ", benchmarking (N launches, M synchronizations)" or ", not benchmarking" */
static void benchmarking(struct tg_w *w, const struct tg_thread_view *v)
{
    if (v->benchmarking && v->launches == 0 && v->syncs == 0) {
        tg_w_str(w, ", benchmarking");  /* known from its frames, counts unknown */
    } else if (v->benchmarking) {
        tg_w_str(w, ", benchmarking (");
        tg_w_u64(w, v->launches);
        tg_w_str(w, v->launches == 1 ? " launch, " : " launches, ");
        tg_w_u64(w, v->syncs);
        tg_w_str(w, v->syncs == 1 ? " synchronization)" : " synchronizations)");
    } else {
        tg_w_str(w, ", not benchmarking");
    }
}

static void thread_block(struct tg_w *w, const struct tg_report *r, const struct tg_thread_view *v)
{
    if (v->has_cuda)
        tg__text_cuda_line(w, r, v);
    else if (v->has_entry_device)
        tg__text_entry_device_line(w, v);
    tg__text_python_stack(w, r, v);
    tg__text_native_stack(w, v);
    tg_w_char(w, '\n');
}

/* "  Call of <tuner> by <entering thread>" (the caller ends the line). */
static void call_of(struct tg_w *w, const struct tg_report *r)
{
    tg_w_str(w, "  Call of ");
    tuner_line(w, r);
    tg_w_str(w, " by ");
    tg__text_thread_name(w, &r->entering);
}

/* "  Previous call, STATE, by <thread>, entered N earlier, benchmarking:"
 * and the thread inside's block. */
static void previous_call(struct tg_w *w, const struct tg_report *r, const char *state)
{
    const struct tg_thread_view *in = &r->inside;
    tg_w_str(w, "  Previous call, ");
    tg_w_str(w, state);
    tg_w_str(w, ", by ");
    tg__text_thread_name(w, in);
    if (in->entered_ns && r->ts_ns >= in->entered_ns) {
        tg_w_str(w, ", entered ");
        tg_w_duration(w, r->ts_ns - in->entered_ns);
        tg_w_str(w, " earlier");
    }
    benchmarking(w, in);
    tg_w_str(w, ":\n");
    thread_block(w, r, in);
}

/* A race seen at entry: the entering thread found another one inside. */
static void write_race_at_entry(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    const struct tg_thread_view *e = &r->entering;
    tg__text_header(w, r, r->seen_at_step ? "thread entered a tuner's tuning step while another thread's call is inside it"
                                 : k->title);
    tg__text_race_summary(w, r);

    call_of(w, r);
    if (r->seen_at_step) {
        tg_w_str(w, ", entering its tuning step ");
        W_FIELD(w, r->step);
    }
    tg_w_str(w, ":\n");
    thread_block(w, r, e);

    previous_call(w, r, "still inside");

    if (r->high_severity && r->declared && r->seen_at_step)
        tg_w_str(w, "  Severity: high: a thread entered the tuning step (tuning=) while another call was inside"
                    " the tuner; the state the step keeps on the shared tuner can be overwritten or cleared"
                    " under it.\n");
    else if (r->high_severity && r->declared && r->step[0])
        tg_w_str(w, "  Severity: high: the thread inside was in its tuning step (tuning=); the state it keeps"
                    " on the shared tuner can be overwritten or cleared under it.\n");
    else if (r->high_severity && r->declared)
        tg_w_str(w, "  Severity: high: the tuner was declared with targets= and no tuning step is named"
                    " (tuning=): every overlap of two calls is a race.\n");
    else if (r->high_severity && r->without_gil && !r->inside.benchmarking)
        tg_w_str(w, "  Severity: high: the GIL was off, so the two calls ran at once; the tuner writes its"
                    " call's arguments on itself on every call, tuned key or not, and the other call clears"
                    " them (TypeError) or replaces them under this one.\n");
    else if (r->high_severity)
        tg_w_str(w, "  Severity: high: the thread inside was benchmarking; the arguments it keeps"
                    " on the shared tuner can be overwritten or cleared under it.\n");
    else if (r->declared)
        tg_w_str(w, "  Severity: low: the thread inside was not in the tuner's tuning step (tuning=).\n");
    else
        tg_w_str(w, "  Severity: low: overlap on an already tuned key (low severity; the thread inside was"
                    " not benchmarking).\n");
    if (r->serialized)
        tg_w_str(w, "  Prevented (serialize mode): the entering thread waited until the tuner was free; the two"
                    " calls did not overlap.\n");
    tg__text_summary(w, r, k->what);
}

/* A race seen when the thread inside returned: the thread that entered
 * during its call was benchmarking by then (seen_at_exit). */
static void write_race_at_exit(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    const struct tg_thread_view *e = &r->entering, *in = &r->inside;
    tg__text_header(w, r, "a call left a tuner while another thread was benchmarking in it");
    tg__text_race_summary(w, r);

    call_of(w, r);
    if (e->entered_ns && in->entered_ns) {
        tg_w_str(w, ", entered ");
        tg_w_duration(w, e->entered_ns >= in->entered_ns ? e->entered_ns - in->entered_ns
                                                         : in->entered_ns - e->entered_ns);
        tg_w_str(w, e->entered_ns >= in->entered_ns ? " after the call below" : " before the call below");
    }
    benchmarking(w, e);
    tg_w_str(w, ", still inside:\n");
    thread_block(w, r, e);

    previous_call(w, r, "returned just now");

    tg_w_str(w, "  Severity: high: the ");
    tg_w_str(w, tg__text_returned_first(r) ? "earlier call returned while the later"
                                           : "later call returned while the earlier");
    tg_w_str(w, " one was benchmarking; its return clears the arguments on the shared tuner (Autotuner.run"
                " ends with self.nargs = None) that the benchmarking call reads next.\n");
    tg__text_summary(w, r, k->what);
}

/* A race seen when the entering thread began tuning: its arguments were
 * cleared by a call that had come and gone (seen_at_tuning). */
static void write_race_at_tuning(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    tg__text_header(w, r, "another call cleared a tuner call's arguments before it began tuning");
    tg__text_race_summary(w, r);
    call_of(w, r);
    tg_w_str(w, ", beginning to tune:\n");
    thread_block(w, r, &r->entering);
    tg_w_str(w, "  The other call entered and returned while this one was inside, before its first tuning"
                " step; its return set self.nargs = None on the shared tuner.  Which thread made it is not"
                " known (it had left).\n");
    tg_w_str(w, "  Severity: high: the tuner's arguments are gone; the benchmark that follows reads them.\n");
    tg__text_summary(w, r, k->what);
}

/* TG_REPORT_RACE: the title is the kind's for a race seen at entry. */
void tg__text_race(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    if (r->seen_at_exit)
        write_race_at_exit(w, r, k);
    else if (r->seen_at_tuning)
        write_race_at_tuning(w, r, k);
    else
        write_race_at_entry(w, r, k);
}
