/* The text report's entry (tg_report_write_text) and the bodies of every
 * kind but a race (reports/text_report.c, with the pieces all share): a
 * replaced method, serialize's own problems (a cycle of waits, a wait too
 * long, a holder that died), tuning under load, an exception a race
 * caused, the repeats.  Their sentences are made here from the record's
 * fields; capture fills facts only.
 *
 * Contract: async-signal-safe (write(2) through reports/writer.c, hand
 * formatted numbers, bounded strings); never allocates; reads the report
 * only; except tg_report_exception_note (stdio: report time, GIL held). */
#include <stdio.h>
#include <string.h>

#include "reports/text_internal.h"

/* " of kernel 'K'", or nothing where the tuner names no kernel. */
static void of_kernel(struct tg_w *w, const struct tg_report *r)
{
    if (!r->kernel[0] || (r->kernel[0] == '?' && r->kernel[1] == '\0'))
        return;
    tg_w_str(w, " of kernel '");
    W_FIELD(w, r->kernel);
    tg_w_char(w, '\'');
}

/* ns as seconds with one decimal, rounded: "2.5". */
static void seconds(struct tg_w *w, uint64_t ns)
{
    uint64_t tenths = (ns + 50000000u) / 100000000u;
    tg_w_u64(w, tenths / 10);
    tg_w_char(w, '.');
    tg_w_char(w, (char)('0' + tenths % 10));
}

/* "Autotuner.run = locked_run at patch.py:12" */
static void replaced_sentence(struct tg_w *w, const struct tg_report *r)
{
    const struct tg_replaced_report *p = &r->replaced;
    W_FIELD(w, r->method);
    tg_w_str(w, " = ");
    if (!p->file[0]) {
        W_FIELD_OR(w, p->qualname, "an object without code");
        return;
    }
    W_FIELD_OR(w, p->qualname, "?");
    tg_w_str(w, " at ");
    W_FIELD(w, p->file);
    tg_w_char(w, ':');
    if (p->line > 0)
        tg_w_i64(w, p->line);
    else
        tg_w_char(w, '?');
}

/* Each thread on the cycle, what it holds and waits for; then the policy. */
static void deadlock_sentence(struct tg_w *w, const struct tg_report *r)
{
    const struct tg_deadlock_report *d = &r->deadlock;
    for (int k = 0; k < d->n && k < TG_CYCLE_MAX; k++) {
        if (k == 0) {
            tg_w_str(w, "this thread (tid=");
            tg_w_i64(w, r->entering.tid);
            tg_w_str(w, ") waits for '");
            W_FIELD(w, d->cycle[0].kernel);
            tg_w_str(w, "'; ");
        }
        if (!d->cycle[k].holder)
            continue;
        if (d->cycle[k].holder == r->entering.tid) {
            tg_w_str(w, "this thread holds '");
            W_FIELD(w, d->cycle[k].kernel);
            tg_w_str(w, "'; ");
            continue;
        }
        tg_w_str(w, "tid=");
        tg_w_i64(w, d->cycle[k].holder);
        tg_w_str(w, " holds '");
        W_FIELD(w, d->cycle[k].kernel);
        tg_w_str(w, "' and waits for '");
        if (k + 1 < d->n)
            W_FIELD(w, d->cycle[k + 1].kernel);
        else
            tg_w_str(w, "a tuner this thread holds");
        tg_w_str(w, "'; ");
    }
    tg_w_str(w, d->abort ? "deadlock=abort: the process stops" : "deadlock=proceed: this thread proceeds unserialized");
}

/* The verdict first: the wait goes on, or this thread proceeds. */
static void wait_sentence(struct tg_w *w, const struct tg_report *r)
{
    const struct tg_wait_report *t = &r->wait;
    if (t->stalled_ns) {
        tg_w_str(w, "this thread proceeds unserialized after ");
        seconds(w, t->waited_ns);
        tg_w_str(w, " s waiting for '");
        W_FIELD(w, r->kernel);
        tg_w_str(w, "' (wait_timeout=");
        tg_w_i64(w, t->timeout_s);
        tg_w_str(w, " s, on_wait_timeout=proceed): the holder, below, is blocked outside tunerguard (no CPU time,"
                    " no CUDA call for ");
        seconds(w, t->stalled_ns);
        tg_w_str(w, " s; a lock of the program's?)");
        return;
    }
    tg_w_str(w, "this thread has waited ");
    seconds(w, t->waited_ns);
    tg_w_str(w, " s for '");
    W_FIELD(w, r->kernel);
    tg_w_str(w, "' (wait_timeout=");
    tg_w_i64(w, t->timeout_s);
    tg_w_str(w, " s); the holder is shown below; the wait goes on");
    tg_w_str(w, t->on_timeout_proceed ? " while the holder runs (it proceeds if the holder blocks outside tunerguard)"
                                      : " (on_wait_timeout=wait)");
}

static void holder_died_sentence(struct tg_w *w, const struct tg_report *r)
{
    tg_w_str(w, "thread tid=");
    tg_w_i64(w, r->inside.tid);
    tg_w_str(w, " left ");
    W_FIELD(w, r->method);
    of_kernel(w, r);
    tg_w_str(w, " without returning (it died inside: pthread_exit or a thread destroyed under Python); its hold"
                " was released");
}

/* The sentence that links the traceback to the race: the other thread, or
 * (inside.tid 0) a call that came and went. */
static void exception_sentence(struct tg_w *w, const struct tg_report *r)
{
    tg_w_str(w, "this ");
    W_FIELD(w, r->exc_type);
    if (!r->inside.tid) {
        tg_w_str(w, " was raised in a call whose arguments another call on ");
        W_FIELD(w, r->method);
        of_kernel(w, r);
        tg_w_str(w, " cleared before it began tuning");
        return;
    }
    tg_w_str(w, " was raised in a call that raced with thread ");
    if (r->inside.name[0]) {
        tg_w_char(w, '\'');
        W_FIELD(w, r->inside.name);
        tg_w_str(w, "' ");
    }
    tg_w_str(w, "(tid=");
    tg_w_i64(w, r->inside.tid);
    tg_w_str(w, ") on ");
    W_FIELD(w, r->method);
    of_kernel(w, r);
}

void tg_report_exception_note(const struct tg_report *r, const char *text_path, char *buf, size_t n)
{
    /* The writer's buffer holds the sentence whole (its fields are bounded
     * far below TG_W_BUFSZ, escapes included), so it is never flushed to
     * the invalid descriptor. */
    static struct tg_w w; /* big; under the report lock */
    tg_w_init(&w, -1);
    exception_sentence(&w, r);
    snprintf(buf, n, "tunerguard: %.*s; see %s", (int)w.len, w.buf,
             text_path && text_path[0] ? text_path : "the report");
}

void tg__text_replaced(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    const struct tg_thread_view *e = &r->entering;
    tg__text_header(w, r, k->title);
    tg_w_str(w, "  ");
    W_FIELD_OR(w, r->method, "?");
    tg_w_str(w, " of ");
    W_FIELD_OR(w, r->tuner_class, "?");
    tg_w_str(w, " was replaced: ");
    replaced_sentence(w, r);
    tg_w_str(w, "\n  The replacement is guarded too.\n");
    if (e->tid || e->npy) {
        tg_w_str(w, "  Found at the first call through it, by ");
        tg__text_thread_name(w, e);
        tg_w_str(w, ":\n");
        tg__text_python_stack(w, r, e);
        tg__text_native_stack(w, e);
    }
    tg__text_summary(w, r, k->what);
}

/* serialize mode's own problems: a cycle of waits, a wait too long. */
void tg__text_wait_problem(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    tg__text_header(w, r, k->title);
    tg_w_str(w, "  ");
    if (r->kind == TG_REPORT_DEADLOCK)
        deadlock_sentence(w, r);
    else if (r->kind == TG_REPORT_WAIT_TIMEOUT)
        wait_sentence(w, r);
    else
        holder_died_sentence(w, r);
    tg_w_str(w, r->kind == TG_REPORT_HOLDER_DIED ? "\n  Found by: " : "\n  Waiting: ");
    tg__text_thread_name(w, &r->entering);
    tg_w_str(w, ":\n");
    tg__text_python_stack(w, r, &r->entering);
    tg__text_native_stack(w, &r->entering);
    tg_w_str(w, r->kind == TG_REPORT_HOLDER_DIED ? "\n  Died holding the tuner: " : "\n  Holding the tuner: ");
    tg__text_thread_name(w, &r->inside);
    tg_w_str(w, ":\n");
    if (r->inside.has_cuda)
        tg__text_cuda_line(w, r, &r->inside);
    else if (r->inside.has_entry_device)
        tg__text_entry_device_line(w, &r->inside);
    tg__text_python_stack(w, r, &r->inside);
    tg__text_native_stack(w, &r->inside);
    tg_w_char(w, '\n');
    tg__text_summary(w, r, k->what);
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
void tg__text_interference(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    const struct tg_itf_report *f = &r->itf;
    tg__text_header(w, r, k->title);
    tg_w_str(w, "  the benchmark of kernel '");
    W_FIELD_OR(w, r->kernel, "?");
    tg_w_char(w, '\'');
    if (f->cuda_kernel[0]) {
        tg_w_str(w, " (CUDA '");
        W_FIELD(w, f->cuda_kernel);
        tg_w_str(w, "')");
    }
    tg_w_str(w, ": timings");
    tg__text_device_words(w, f->device);
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
    tg__text_thread_name(w, &r->entering);
    tg_w_str(w, " (");
    tg_w_u64(w, f->own);
    tg_w_str(w, f->own == 1 ? " own launch" : " own launches");
    tg_w_str(w, " on the device); the config chosen, and cached, may be the wrong one.\n");
    if (f->gpu) /* cupti=1: what really ran on the GPU meanwhile */
        itf_gpu_line(w, f);
    tg__text_python_stack(w, r, &r->entering);
    tg_w_char(w, '\n');
    tg__text_summary(w, r, k->what);
}

/* The link from the traceback on the user's screen to the race. */
void tg__text_exception(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    tg__text_header(w, r, k->title);
    tg_w_str(w, "  ");
    exception_sentence(w, r);
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
    tg__text_thread_name(w, &r->entering);
    tg_w_str(w, ":\n");
    tg__text_python_stack(w, r, &r->entering);
    if (r->inside.tid) {
        tg_w_str(w, "  Raced with ");
        tg__text_thread_name(w, &r->inside);
        tg_w_str(w, "\n\n");
    } else {
        tg_w_str(w, "  Raced with another call on the same tuner, which had returned\n\n");
    }
    tg__text_summary(w, r, k->what);
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
void tg__text_repeats(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    tg__text_header(w, r, k->title);
    if (r->repeat_of == TG_REPORT_INTERFERENCE) {
        tg_w_str(w, "  ");
        tg_w_u64(w, r->repeats);
        tg_w_str(w, r->repeats == 1 ? " more benchmark" : " more benchmarks");
        tg_w_str(w, " of this kernel timed under load after report #");
        tg_w_u64(w, r->race_seq);
        tg_w_str(w, "; not written again (verbosity=2 writes each).\n");
        tg__text_summary(w, r, k->what);
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
        tg__text_summary(w, r, k->what);
        return;
    }
    tg_w_str(w, " of this process repeated ");
    tg_w_u64(w, r->repeats);
    tg_w_str(w, r->repeats == 1 ? " more time" : " more times");
    tg_w_str(w, " for the same bug (the same kernel, tuner class and call sites into it; an exception: the same"
                " race);\n  not written again (verbosity=2 writes each occurrence).\n");
    tg__text_summary(w, r, k->what);
}

/* The one entry of the text report: the body of r's kind (a race:
 * reports/text_report.c). */
int tg_report_write_text(int fd, const struct tg_report *r)
{
    struct tg_w w;
    tg_w_init(&w, fd);
    const struct tg_report_kind_info *k = (unsigned)r->kind < TG_REPORT_NKINDS ? &tg_report_kinds[r->kind] : NULL;
    switch (r->kind) {
#define TG_REPORT_KIND(ID, json, title, what, body, supp, flags, exit) \
    case TG_REPORT_##ID:                                             \
        tg__text_##body(&w, r, k);                                   \
        break;
#include "core/report_kinds.inc"
#undef TG_REPORT_KIND
    case TG_REPORT_NKINDS:
        break;
    }
    return tg_w_flush(&w);
}
