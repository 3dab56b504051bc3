/* The text report: ThreadSanitizer-shaped, one block per thread, stable and
 * greppable (tests/unit/expected/ holds the exact shape).  A race opens with
 * its summary (reports/text_summary.h); stacks are folded
 * (reports/stack_fold.h), the JSON Lines record keeps them whole; every
 * string from the program is escaped (tg_w_text).
 *
 * Contract: async-signal-safe (write(2) through reports/writer.c, hand
 * formatted numbers, bounded strings); never allocates; reads the report
 * only.  Symbols come from tg_report_symbolize() when it ran; otherwise raw
 * addresses. */
#include <string.h>

#include "reports/report.h"
#include "reports/report_internal.h"
#include "reports/stack_fold.h"
#include "reports/text_summary.h"
#include "reports/writer.h"

#define FENCE "==================\n"

/* Every string from the program (names, paths, messages) goes through
 * tg_w_text: control bytes escaped, so none can forge a line. */
#define W_FIELD(w, field) tg_w_text((w), (field), TG__FIELD_SIZE(field))
/* A fixed-size field, or dflt when it is empty. */
#define W_FIELD_OR(w, field, dflt) \
    ((field)[0] ? tg_w_text((w), (field), TG__FIELD_SIZE(field)) : tg_w_str((w), (dflt)))

static void thread_name(struct tg_w *w, const struct tg_thread_view *v)
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
static void python_stack(struct tg_w *w, const struct tg_report *r, const struct tg_thread_view *v)
{
    struct tg_fold_line lines[TG_MAX_PY_FRAMES + 1];
    int n = tg_py_fold(r, v, lines, TG_MAX_PY_FRAMES + 1);
    tg_w_str(w, "    Python (most recent call first):\n");
    if (n == 0 && v->py_unreadable)
        tg_w_str(w, "      <not readable: the interpreter was finalizing and had released this thread's state>\n");
    else if (n == 0)
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
static void native_stack(struct tg_w *w, const struct tg_thread_view *v)
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
static void device_words(struct tg_w *w, int device)
{
    if (device < 0) {
        tg_w_str(w, " on an unknown device");
        return;
    }
    tg_w_str(w, " on device ");
    tg_w_i64(w, device);
}

/* A thread with no CUDA call yet: the device it entered the tuner on. */
static void entry_device_line(struct tg_w *w, const struct tg_thread_view *v)
{
    tg_w_str(w, "    No CUDA call yet; on device ");
    tg_w_i64(w, v->entry_device);
    tg_w_str(w, " when it entered the tuner\n");
}

static void cuda_line(struct tg_w *w, const struct tg_report *r, const struct tg_thread_view *v)
{
    const struct tg_cuda_call *c = &v->cuda;
    tg_w_str(w, "    Last CUDA call: ");
    if (v->cuda_fn[0]) {
        W_FIELD(w, v->cuda_fn);
    } else {
        tg_w_str(w, "driver function #");
        tg_w_u64(w, c->fn);
    }
    device_words(w, c->device);
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
        tg_w_str(w, ", still inside it (GIL released)\n");
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

static void header(struct tg_w *w, const struct tg_report *r, const char *what)
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

static void summary(struct tg_w *w, const struct tg_report *r, const char *what)
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
        cuda_line(w, r, v);
    else if (v->has_entry_device)
        entry_device_line(w, v);
    python_stack(w, r, v);
    native_stack(w, v);
    tg_w_char(w, '\n');
}

/* "  Call of <tuner> by <entering thread>" (the caller ends the line). */
static void call_of(struct tg_w *w, const struct tg_report *r)
{
    tg_w_str(w, "  Call of ");
    tuner_line(w, r);
    tg_w_str(w, " by ");
    thread_name(w, &r->entering);
}

/* "  Previous call, STATE, by <thread>, entered N earlier, benchmarking:"
 * and the thread inside's block. */
static void previous_call(struct tg_w *w, const struct tg_report *r, const char *state)
{
    const struct tg_thread_view *in = &r->inside;
    tg_w_str(w, "  Previous call, ");
    tg_w_str(w, state);
    tg_w_str(w, ", by ");
    thread_name(w, in);
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
    header(w, r, r->seen_at_step ? "thread entered a tuner's tuning step while another thread's call is inside it"
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
    summary(w, r, k->what);
}

/* A race seen when the thread inside returned: the thread that entered
 * during its call was benchmarking by then (seen_at_exit). */
static void write_race_at_exit(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    const struct tg_thread_view *e = &r->entering, *in = &r->inside;
    header(w, r, "a call left a tuner while another thread was benchmarking in it");
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
    summary(w, r, k->what);
}

/* A race seen when the entering thread began tuning: its arguments were
 * cleared by a call that had come and gone (seen_at_tuning). */
static void write_race_at_tuning(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    header(w, r, "another call cleared a tuner call's arguments before it began tuning");
    tg__text_race_summary(w, r);
    call_of(w, r);
    tg_w_str(w, ", beginning to tune:\n");
    thread_block(w, r, &r->entering);
    tg_w_str(w, "  The other call entered and returned while this one was inside, before its first tuning"
                " step; its return set self.nargs = None on the shared tuner.  Which thread made it is not"
                " known (it had left).\n");
    tg_w_str(w, "  Severity: high: the tuner's arguments are gone; the benchmark that follows reads them.\n");
    summary(w, r, k->what);
}

/* TG_REPORT_RACE: the title is the kind's for a race seen at entry. */
static void text_race(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    if (r->seen_at_exit)
        write_race_at_exit(w, r, k);
    else if (r->seen_at_tuning)
        write_race_at_tuning(w, r, k);
    else
        write_race_at_entry(w, r, k);
}

static void text_replaced(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    const struct tg_thread_view *e = &r->entering;
    header(w, r, k->title);
    tg_w_str(w, "  ");
    W_FIELD_OR(w, r->method, "?");
    tg_w_str(w, " of ");
    W_FIELD_OR(w, r->tuner_class, "?");
    tg_w_str(w, " was replaced: ");
    W_FIELD(w, r->detail);
    tg_w_str(w, "\n  The replacement is guarded too.\n");
    if (e->tid || e->npy) {
        tg_w_str(w, "  Found at the first call through it, by ");
        thread_name(w, e);
        tg_w_str(w, ":\n");
        python_stack(w, r, e);
        native_stack(w, e);
    }
    summary(w, r, k->what);
}

/* serialize mode's own problems: a cycle of waits, a wait too long. */
static void text_wait_problem(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    header(w, r, k->title);
    tg_w_str(w, "  ");
    W_FIELD(w, r->detail);
    tg_w_str(w, r->kind == TG_REPORT_HOLDER_DIED ? "\n  Found by: " : "\n  Waiting: ");
    thread_name(w, &r->entering);
    tg_w_str(w, ":\n");
    python_stack(w, r, &r->entering);
    native_stack(w, &r->entering);
    tg_w_str(w, r->kind == TG_REPORT_HOLDER_DIED ? "\n  Died holding the tuner: " : "\n  Holding the tuner: ");
    thread_name(w, &r->inside);
    tg_w_str(w, ":\n");
    if (r->inside.has_cuda)
        cuda_line(w, r, &r->inside);
    else if (r->inside.has_entry_device)
        entry_device_line(w, &r->inside);
    python_stack(w, r, &r->inside);
    native_stack(w, &r->inside);
    tg_w_char(w, '\n');
    summary(w, r, k->what);
}

static void us(struct tg_w *w, uint64_t ns)
{
    tg_w_u64(w, ns / 1000);
    char d[5] = {'.', (char)('0' + ns % 1000 / 100), (char)('0' + ns % 100 / 10), (char)('0' + ns % 10), 0};
    tg_w_str(w, d);
    tg_w_str(w, " us");
}

/* "  On the GPU: ..." (cupti=1): the overlap and the kernels behind it. */
static void itf_gpu_line(struct tg_w *w, const struct tg_itf_report *f)
{
    tg_w_str(w, "  On the GPU (cupti=1): other threads' kernels executed for ");
    us(w, f->overlap_ns);
    tg_w_str(w, " inside its timed intervals (");
    us(w, f->timed_ns);
    tg_w_str(w, " over ");
    tg_w_u64(w, f->own_kernels);
    tg_w_str(w, " own kernels): ");
    for (int i = 0; i < f->ngpu && i < TG_ITF_REPORT_FROM; i++) {
        if (i)
            tg_w_str(w, ", ");
        tg_w_char(w, '\'');
        W_FIELD_OR(w, f->gpu_by[i].kernel, "?");
        tg_w_str(w, "' x");
        tg_w_u64(w, f->gpu_by[i].count);
        tg_w_str(w, " from tid ");
        if (f->gpu_by[i].tid)
            tg_w_i64(w, f->gpu_by[i].tid);
        else
            tg_w_char(w, '?');
        tg_w_str(w, " on stream ");
        tg_w_u64(w, f->gpu_by[i].stream);
        tg_w_str(w, " (");
        us(w, f->gpu_by[i].overlap_ns);
        tg_w_char(w, ')');
    }
    if (f->foreign_kernels > (uint32_t)f->ngpu && f->ngpu >= TG_ITF_REPORT_FROM)
        tg_w_str(w, ", ...");
    tg_w_char(w, '\n');
}

/* A benchmark taken while other threads launched kernels on its device. */
static void text_interference(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    const struct tg_itf_report *f = &r->itf;
    header(w, r, k->title);
    tg_w_str(w, "  the benchmark of kernel '");
    W_FIELD_OR(w, r->kernel, "?");
    tg_w_char(w, '\'');
    if (f->cuda_kernel[0]) {
        tg_w_str(w, " (CUDA '");
        W_FIELD(w, f->cuda_kernel);
        tg_w_str(w, "')");
    }
    tg_w_str(w, ": timings");
    device_words(w, f->device);
    tg_w_str(w, " were taken under load: ");
    tg_w_u64(w, f->foreign);
    tg_w_str(w, f->foreign == 1 ? " foreign kernel" : " foreign kernels");
    tg_w_str(w, " from threads ");
    for (int i = 0, shown = 0; i < f->nfrom && i < TG_ITF_REPORT_FROM; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= f->from[j].tid == f->from[i].tid;
        if (dup)
            continue;
        if (shown++)
            tg_w_str(w, ", ");
        tg_w_i64(w, f->from[i].tid);
    }
    if (f->nfrom <= 0)
        tg_w_str(w, "not recorded");
    tg_w_str(w, " (kernels ");
    for (int i = 0, shown = 0; i < f->nfrom && i < TG_ITF_REPORT_FROM; i++) {
        int dup = 0;
        for (int j = 0; j < i && f->from[i].kernel[0]; j++)
            dup |= strcmp(f->from[j].kernel, f->from[i].kernel) == 0;
        if (dup)
            continue;
        if (shown++)
            tg_w_str(w, ", ");
        if (f->from[i].kernel[0]) {
            tg_w_char(w, '\'');
            W_FIELD(w, f->from[i].kernel);
            tg_w_char(w, '\'');
        } else {
            tg_w_hex(w, f->from[i].func);
        }
    }
    if (f->nfrom <= 0)
        tg_w_str(w, "not recorded");
    tg_w_char(w, ')');
    if (f->best_config[0]) { /* the tuner keeps its winner where tunerguard reads it (Triton's best_config) */
        tg_w_str(w, ", config that won: ");
        W_FIELD(w, f->best_config);
    }
    tg_w_str(w, "\n  Benchmarked by ");
    thread_name(w, &r->entering);
    tg_w_str(w, " (");
    tg_w_u64(w, f->own);
    tg_w_str(w, f->own == 1 ? " own launch" : " own launches");
    tg_w_str(w, " on the device); the config chosen, and cached, may be the wrong one.\n");
    if (f->gpu) /* cupti=1: what really ran on the GPU meanwhile */
        itf_gpu_line(w, f);
    python_stack(w, r, &r->entering);
    tg_w_char(w, '\n');
    summary(w, r, k->what);
}

/* The link from the traceback on the user's screen to the race. */
static void text_exception(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    header(w, r, k->title);
    tg_w_str(w, "  ");
    W_FIELD(w, r->detail);
    tg_w_str(w, "\n  Exception: ");
    W_FIELD_OR(w, r->exc_type, "?");
    tg_w_str(w, ": ");
    W_FIELD(w, r->exc_msg);
    if (r->race_seq) {
        tg_w_str(w, "\n  The race is report #");
        tg_w_u64(w, r->race_seq);
        tg_w_str(w, " of this process");
    }
    tg_w_str(w, "\n  Raised in ");
    thread_name(w, &r->entering);
    tg_w_str(w, ":\n");
    python_stack(w, r, &r->entering);
    if (r->inside.tid) {
        tg_w_str(w, "  Raced with ");
        thread_name(w, &r->inside);
        tg_w_str(w, "\n\n");
    } else {
        tg_w_str(w, "  Raced with another call on the same tuner, which had returned\n\n");
    }
    summary(w, r, k->what);
}

/* ", also on 9 other kernels: a, b, c and 6 more" of a prevented race's
 * repeats record; nothing when every repeat was on the report's kernel. */
static void other_kernels(struct tg_w *w, const struct tg_report *r)
{
    if (r->other_kernels <= 0)
        return;
    tg_w_str(w, ",\n  also on ");
    if (r->other_kernels >= TG_OTHER_KERNELS_KEPT)
        tg_w_str(w, "at least ");
    tg_w_u64(w, (uint64_t)r->other_kernels);
    tg_w_str(w, r->other_kernels == 1 ? " other kernel: " : " other kernels: ");
    int shown = 0;
    for (; shown < 3 && shown < r->other_kernels && r->other_names[shown][0]; shown++) {
        if (shown)
            tg_w_str(w, ", ");
        tg_w_char(w, '\'');
        W_FIELD(w, r->other_names[shown]);
        tg_w_char(w, '\'');
    }
    if (shown < r->other_kernels) {
        tg_w_str(w, " and ");
        tg_w_u64(w, (uint64_t)(r->other_kernels - shown));
        tg_w_str(w, " more");
    }
}

/* At exit: how many times a race (or exception) report was seen again. */
static void text_repeats(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    header(w, r, k->title);
    if (r->repeat_of == TG_REPORT_INTERFERENCE) {
        tg_w_str(w, "  ");
        tg_w_u64(w, r->repeats);
        tg_w_str(w, r->repeats == 1 ? " more benchmark" : " more benchmarks");
        tg_w_str(w, " of this kernel timed under load after report #");
        tg_w_u64(w, r->race_seq);
        tg_w_str(w, "; not written again (verbosity=2 writes each).\n");
        summary(w, r, k->what);
        return;
    }
    tg_w_str(w, "  Report #");
    tg_w_u64(w, r->race_seq);
    if (r->serialized && r->repeat_of == TG_REPORT_RACE) {
        tg_w_str(w, " of this process: serialize prevented the same race ");
        tg_w_u64(w, r->repeats);
        tg_w_str(w, r->repeats == 1 ? " more time" : " more times");
        tg_w_str(w, " at the same call sites");
        other_kernels(w, r);
        tg_w_str(w, ";\n  not written again (verbosity=2 writes each occurrence).\n");
        summary(w, r, k->what);
        return;
    }
    tg_w_str(w, " of this process repeated ");
    tg_w_u64(w, r->repeats);
    tg_w_str(w, r->repeats == 1 ? " more time" : " more times");
    tg_w_str(w, " for the same bug (the same kernel, tuner class and call sites into it; an exception: the same"
                " race);\n  not written again (verbosity=2 writes each occurrence).\n");
    summary(w, r, k->what);
}

int tg_report_write_text(int fd, const struct tg_report *r)
{
    struct tg_w w;
    tg_w_init(&w, fd);
    const struct tg_report_kind_info *k = (unsigned)r->kind < TG_REPORT_NKINDS ? &tg_report_kinds[r->kind] : NULL;
    switch (r->kind) {
#define TG_REPORT_KIND(ID, json, title, what, body, supp, flags, exit) \
    case TG_REPORT_##ID:                                             \
        text_##body(&w, r, k);                                       \
        break;
#include "core/report_kinds.inc"
#undef TG_REPORT_KIND
    case TG_REPORT_NKINDS:
        break;
    }
    return tg_w_flush(&w);
}
