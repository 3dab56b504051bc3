/* The JSON Lines report: one object per report on one line, schema in
 * docs/report-schema.md ("schema":2).  Keys are always present (null or []
 * when unknown), so consumers need no existence checks.
 *
 * Contract: async-signal-safe (write(2) through reports/writer.c), never
 * allocates, reads the report only. */
#include "reports/mixed_stack.h"
#include "core/clock.h"
#include "reports/report.h"
#include "reports/report_internal.h"
#include "reports/stack_fold.h"
#include "reports/writer.h"

#define J_STR(w, field) tg_w_json_str((w), (field), TG__FIELD_SIZE(field))

static void key(struct tg_w *w, const char *k)
{
    tg_w_char(w, '"');
    tg_w_str(w, k);
    tg_w_str(w, "\":");
}

static void bool_(struct tg_w *w, int b)
{
    tg_w_str(w, b ? "true" : "false");
}

/* "0x..." as a string: JSON numbers lose precision above 2^53 */
static void hexstr(struct tg_w *w, uint64_t v)
{
    tg_w_char(w, '"');
    tg_w_hex(w, v);
    tg_w_char(w, '"');
}

/* A non-empty bounded string, or null. */
static void str_or_null(struct tg_w *w, const char *s, size_t max)
{
    if (s[0])
        tg_w_json_str(w, s, max);
    else
        tg_w_str(w, "null");
}

/* interference.gpu (cupti=1): null, or the GPU-interval verdict. */
static void gpu_itf(struct tg_w *w, const struct tg_itf_report *f)
{
    if (!f->gpu) {
        tg_w_str(w, "null");
        return;
    }
    tg_w_str(w, "{\"overlap_us\":");
    tg_w_u64(w, f->overlap_ns / 1000);
    char d[5] = {'.', (char)('0' + f->overlap_ns % 1000 / 100), (char)('0' + f->overlap_ns % 100 / 10),
                 (char)('0' + f->overlap_ns % 10), 0};
    tg_w_str(w, d);
    tg_w_str(w, ",\"overlap_ns\":");
    tg_w_u64(w, f->overlap_ns);
    tg_w_str(w, ",\"timed_ns\":");
    tg_w_u64(w, f->timed_ns);
    tg_w_str(w, ",\"own_kernels\":");
    tg_w_u64(w, f->own_kernels);
    tg_w_str(w, ",\"foreign_kernels\":");
    tg_w_u64(w, f->foreign_kernels);
    tg_w_str(w, ",\"kernels\":[");
    for (int i = 0; i < f->ngpu && i < TG_ITF_REPORT_FROM; i++) {
        tg_w_str(w, i ? ",{\"kernel\":" : "{\"kernel\":");
        str_or_null(w, f->gpu_by[i].kernel, sizeof f->gpu_by[i].kernel);
        tg_w_str(w, ",\"kernel_mangled\":");
        str_or_null(w, f->gpu_by[i].kernel_mangled, sizeof f->gpu_by[i].kernel_mangled);
        tg_w_str(w, ",\"tid\":");
        if (f->gpu_by[i].tid)
            tg_w_i64(w, f->gpu_by[i].tid);
        else
            tg_w_str(w, "null");
        tg_w_str(w, ",\"stream\":");
        tg_w_u64(w, f->gpu_by[i].stream);
        tg_w_str(w, ",\"count\":");
        tg_w_u64(w, f->gpu_by[i].count);
        tg_w_str(w, ",\"overlap_ns\":");
        tg_w_u64(w, f->gpu_by[i].overlap_ns);
        tg_w_char(w, '}');
    }
    tg_w_str(w, "]}");
}

static const char *cuda_kind(unsigned k)
{
    switch ((enum tg_cuda_kind)k) {
    case TG_CUDA_NONE: return "none";
    case TG_CUDA_LAUNCH: return "launch";
    case TG_CUDA_SYNC: return "sync";
    case TG_CUDA_MODULE: return "module";
    case TG_CUDA_OTHER: return "other";
    }
    return "other";
}

static void cuda(struct tg_w *w, const struct tg_thread_view *v)
{
    const struct tg_cuda_call *c = &v->cuda;
    tg_w_char(w, '{');
    key(w, "fn");
    str_or_null(w, v->cuda_fn, sizeof v->cuda_fn);
    tg_w_str(w, ",\"fn_index\":");
    tg_w_u64(w, c->fn);
    tg_w_str(w, ",\"kind\":\"");
    tg_w_str(w, cuda_kind(c->kind));
    tg_w_str(w, "\",\"inside\":");
    bool_(w, c->inside);
    tg_w_str(w, ",\"device\":");
    if (c->device >= 0)
        tg_w_i64(w, c->device);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"stream\":");
    hexstr(w, c->stream);
    tg_w_str(w, ",\"function\":");
    if (c->func)
        hexstr(w, c->func);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"kernel\":");
    str_or_null(w, v->cuda_kernel, sizeof v->cuda_kernel);
    tg_w_str(w, ",\"kernel_mangled\":");
    str_or_null(w, v->cuda_kernel_mangled, sizeof v->cuda_kernel_mangled);
    tg_w_str(w, ",\"t_enter_ns\":");
    tg_w_u64(w, c->t_enter);
    tg_w_str(w, ",\"t_exit_ns\":");
    if (c->t_exit)
        tg_w_u64(w, c->t_exit);
    else
        tg_w_str(w, "null");
    tg_w_char(w, '}');
}

/* A native frame's keys from "pc" on, and the closing brace (mixed frames
 * write their own "{" and "kind" first); file/line are null when unknown. */
static void native_fields(struct tg_w *w, const struct tg_thread_view *v, void *const *frames, int i)
{
    tg_w_str(w, "\"pc\":");
    hexstr(w, (uintptr_t)frames[i]);
    tg_w_str(w, ",\"symbol\":");
    if (i < v->nsym && v->native_sym[i][0])
        J_STR(w, v->native_sym[i]);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"mangled\":");
    if (i < v->nsym)
        str_or_null(w, v->native_mangled[i], sizeof v->native_mangled[i]);
    else
        tg_w_str(w, "null");
    int src = i < v->nsym && v->native_line[i] > 0 && v->native_file[i][0];
    tg_w_str(w, ",\"file\":");
    if (src)
        J_STR(w, v->native_file[i]);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"line\":");
    if (src)
        tg_w_i64(w, v->native_line[i]);
    else
        tg_w_str(w, "null");
    tg_w_char(w, '}');
}

static void native_frame(struct tg_w *w, const struct tg_thread_view *v, void *const *frames, int i)
{
    tg_w_char(w, '{');
    native_fields(w, v, frames, i);
}

static void thread(struct tg_w *w, const struct tg_report *r, const struct tg_thread_view *v)
{
    tg_w_char(w, '{');
    key(w, "tid");
    tg_w_i64(w, v->tid);
    tg_w_str(w, ",\"ident\":");
    tg_w_u64(w, v->ident);
    tg_w_str(w, ",\"name\":");
    str_or_null(w, v->name, sizeof v->name);
    tg_w_str(w, ",\"entered_ns\":");
    if (v->entered_ns)
        tg_w_u64(w, v->entered_ns);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"entered_ago_ns\":");
    if (v->entered_ns && r->ts_ns >= v->entered_ns)
        tg_w_u64(w, r->ts_ns - v->entered_ns);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"benchmarking\":");
    bool_(w, v->benchmarking);
    tg_w_str(w, ",\"launches\":");
    tg_w_u64(w, v->launches);
    tg_w_str(w, ",\"syncs\":");
    tg_w_u64(w, v->syncs);

    tg_w_str(w, ",\"python\":[");
    int n = tg__npy(v);
    for (int i = 0; i < n; i++) {
        if (i)
            tg_w_char(w, ',');
        tg_w_str(w, "{\"func\":");
        J_STR(w, v->py[i].func);
        tg_w_str(w, ",\"file\":");
        J_STR(w, v->py[i].file);
        tg_w_str(w, ",\"line\":");
        tg_w_i64(w, v->py[i].line);
        tg_w_char(w, '}');
    }
    tg_w_str(w, "],\"python_truncated\":");
    bool_(w, v->py_truncated);
    tg_w_str(w, ",\"python_omitted\":");
    tg_w_i64(w, v->py_omitted > 0 ? v->py_omitted : 0);
    tg_w_str(w, ",\"python_unreadable\":");
    bool_(w, v->py_unreadable);
    tg_w_str(w, ",\"python_at_entry\":");
    bool_(w, v->py_at_entry);

    const char *where;
    void *const *frames = tg__view_native(v, &n, &where);
    tg_w_str(w, ",\"native_where\":");
    if (n > 0 && !where[0] && v->cuda_fn[0]) {
        tg_w_str(w, "\"in ");
        /* cuda_fn is an identifier: no escaping needed beyond the bound */
        tg_w_strn(w, v->cuda_fn, sizeof v->cuda_fn);
        tg_w_char(w, '"');
    } else {
        str_or_null(w, where, sizeof v->native_where);
    }
    tg_w_str(w, ",\"native\":[");
    for (int i = 0; i < n; i++) {
        if (i)
            tg_w_char(w, ',');
        native_frame(w, v, frames, i);
    }
    tg_w_str(w, "],\"mixed\":[");
    struct tg_mixed_frame m[TG_MAX_MIXED_FRAMES];
    int nm = tg_mixed_view(v, m, TG_MAX_MIXED_FRAMES);
    for (int i = 0; i < nm; i++) {
        if (i)
            tg_w_char(w, ',');
        if (m[i].kind == TG_MIXED_NATIVE) {
            tg_w_str(w, "{\"kind\":\"native\",\"index\":");
            tg_w_i64(w, m[i].index);
            tg_w_char(w, ',');
            native_fields(w, v, frames, m[i].index);
        } else {
            const struct tg_py_frame *f = &v->py[m[i].index];
            tg_w_str(w, "{\"kind\":\"python\",\"index\":");
            tg_w_i64(w, m[i].index);
            tg_w_str(w, ",\"func\":");
            J_STR(w, f->func);
            tg_w_str(w, ",\"file\":");
            J_STR(w, f->file);
            tg_w_str(w, ",\"line\":");
            tg_w_i64(w, f->line);
            tg_w_char(w, '}');
        }
    }
    tg_w_str(w, "],\"cuda\":");
    if (v->has_cuda)
        cuda(w, v);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"device_at_entry\":");
    if (v->has_entry_device)
        tg_w_i64(w, v->entry_device);
    else
        tg_w_str(w, "null");
    tg_w_char(w, '}');
}

static void common(struct tg_w *w, const struct tg_report *r, const char *kind)
{
    tg_w_str(w, "{\"schema\":");
    tg_w_u64(w, TG_REPORT_SCHEMA_VERSION);
    tg_w_str(w, ",\"kind\":\"");
    tg_w_str(w, kind);
    tg_w_str(w, "\",\"seq\":");
    tg_w_u64(w, r->seq);
    tg_w_str(w, ",\"pid\":");
    tg_w_i64(w, r->pid);
    tg_w_str(w, ",\"rank\":");
    if (r->rank >= 0)
        tg_w_i64(w, r->rank);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"mode\":");
    if (r->mode)
        tg_w_json_str(w, r->mode, 32);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"ts_ns\":");
    tg_w_u64(w, r->ts_ns);
    tg_w_str(w, ",\"wall_ns\":");
    tg_w_u64(w, tg_wall_of_mono(r->ts_ns));
    tg_w_str(w, ",\"tuner\":{\"class\":");
    str_or_null(w, r->tuner_class, sizeof r->tuner_class);
    tg_w_str(w, ",\"method\":");
    str_or_null(w, r->method, sizeof r->method);
    tg_w_str(w, ",\"kernel\":");
    if (r->kernel[0] == '?' && r->kernel[1] == '\0')
        tg_w_str(w, "null"); /* a tuner that names no kernel (a declared one) */
    else
        str_or_null(w, r->kernel, sizeof r->kernel);
    tg_w_str(w, ",\"declared\":");
    bool_(w, r->declared);
    tg_w_str(w, ",\"instance\":");
    if (r->instance)
        hexstr(w, r->instance);
    else
        tg_w_str(w, "null");
    tg_w_str(w, "},\"location\":");
    int i = tg_summary_frame(r);
    if (i >= 0) {
        tg_w_str(w, "{\"func\":");
        J_STR(w, r->entering.py[i].func);
        tg_w_str(w, ",\"file\":");
        J_STR(w, r->entering.py[i].file);
        tg_w_str(w, ",\"line\":");
        tg_w_i64(w, r->entering.py[i].line);
        tg_w_char(w, '}');
    } else {
        tg_w_str(w, "null");
    }
}

/* The bodies, one per shape of core/report_kinds.inc (its body column). */
static void json_race(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    common(w, r, k->json);
    tg_w_str(w, ",\"severity\":\"");
    tg_w_str(w, r->high_severity ? "high" : "low");
    tg_w_str(w, "\",\"serialized\":");
    bool_(w, r->serialized);
    tg_w_str(w, r->seen_at_exit     ? ",\"seen_at\":\"exit\""
                : r->seen_at_step   ? ",\"seen_at\":\"step\""
                : r->seen_at_tuning ? ",\"seen_at\":\"tuning\""
                                    : ",\"seen_at\":\"entry\"");
    if (r->without_gil) /* only then: a record with the GIL has no such key */
        tg_w_str(w, ",\"gil\":\"off\"");
    tg_w_str(w, ",\"tuning_step\":");
    str_or_null(w, r->step, sizeof r->step);
    tg_w_str(w, ",\"entering\":");
    thread(w, r, &r->entering);
    tg_w_str(w, ",\"inside\":");
    if (r->seen_at_tuning)
        tg_w_str(w, "null"); /* the call that cleared the arguments had left */
    else
        thread(w, r, &r->inside);
}

/* A deadlock's cycle: the tuners in the order of the waits. */
static void deadlock_fields(struct tg_w *w, const struct tg_deadlock_report *d)
{
    tg_w_str(w, ",\"cycle\":[");
    for (int i = 0; i < d->n && i < TG_CYCLE_MAX; i++) {
        tg_w_str(w, i ? ",{\"kernel\":" : "{\"kernel\":");
        str_or_null(w, d->cycle[i].kernel, sizeof d->cycle[i].kernel);
        tg_w_str(w, ",\"holder_tid\":");
        if (d->cycle[i].holder)
            tg_w_i64(w, d->cycle[i].holder);
        else
            tg_w_str(w, "null");
        tg_w_char(w, '}');
    }
    tg_w_str(w, d->abort ? "],\"policy\":\"abort\"" : "],\"policy\":\"proceed\"");
}

static void wait_fields(struct tg_w *w, const struct tg_wait_report *t)
{
    tg_w_str(w, ",\"waited_ns\":");
    tg_w_u64(w, t->waited_ns);
    tg_w_str(w, ",\"stalled_ns\":");
    if (t->stalled_ns)
        tg_w_u64(w, t->stalled_ns);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"proceeds\":");
    bool_(w, t->stalled_ns != 0);
    tg_w_str(w, ",\"wait_timeout_s\":");
    tg_w_i64(w, t->timeout_s);
    tg_w_str(w, t->on_timeout_proceed ? ",\"on_wait_timeout\":\"proceed\"" : ",\"on_wait_timeout\":\"wait\"");
}

static void json_wait_problem(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    common(w, r, k->json);
    if (r->kind == TG_REPORT_DEADLOCK)
        deadlock_fields(w, &r->deadlock);
    else if (r->kind == TG_REPORT_WAIT_TIMEOUT)
        wait_fields(w, &r->wait);
    tg_w_str(w, ",\"entering\":");
    thread(w, r, &r->entering);
    tg_w_str(w, ",\"inside\":");
    thread(w, r, &r->inside);
}

static void json_exception(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    common(w, r, k->json);
    tg_w_str(w, ",\"exception\":{\"type\":");
    J_STR(w, r->exc_type);
    tg_w_str(w, ",\"message\":");
    J_STR(w, r->exc_msg);
    tg_w_str(w, "},\"race_seq\":");
    if (r->race_seq)
        tg_w_u64(w, r->race_seq);
    else
        tg_w_str(w, "null");
    tg_w_str(w, ",\"entering\":");
    thread(w, r, &r->entering);
    tg_w_str(w, ",\"inside\":");
    thread(w, r, &r->inside);
}

static void json_interference(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    common(w, r, k->json);
    tg_w_str(w, ",\"interference\":{\"device\":");
    tg_w_i64(w, r->itf.device);
    tg_w_str(w, ",\"foreign_launches\":");
    tg_w_u64(w, r->itf.foreign);
    tg_w_str(w, ",\"own_launches\":");
    tg_w_u64(w, r->itf.own);
    tg_w_str(w, ",\"cuda_kernel\":");
    str_or_null(w, r->itf.cuda_kernel, sizeof r->itf.cuda_kernel);
    tg_w_str(w, ",\"cuda_kernel_mangled\":");
    str_or_null(w, r->itf.cuda_kernel_mangled, sizeof r->itf.cuda_kernel_mangled);
    tg_w_str(w, ",\"best_config\":");
    str_or_null(w, r->itf.best_config, sizeof r->itf.best_config);
    tg_w_str(w, ",\"from\":[");
    for (int i = 0; i < r->itf.nfrom && i < TG_ITF_REPORT_FROM; i++) {
        tg_w_str(w, i ? ",{\"tid\":" : "{\"tid\":");
        tg_w_i64(w, r->itf.from[i].tid);
        tg_w_str(w, ",\"function\":");
        hexstr(w, r->itf.from[i].func);
        tg_w_str(w, ",\"kernel\":");
        str_or_null(w, r->itf.from[i].kernel, sizeof r->itf.from[i].kernel);
        tg_w_str(w, ",\"kernel_mangled\":");
        str_or_null(w, r->itf.from[i].kernel_mangled, sizeof r->itf.from[i].kernel_mangled);
        tg_w_char(w, '}');
    }
    tg_w_str(w, "],\"gpu\":");
    gpu_itf(w, &r->itf);
    tg_w_str(w, "},\"entering\":");
    thread(w, r, &r->entering);
}

static void json_replaced(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    common(w, r, k->json);
    tg_w_str(w, ",\"replacement\":{\"qualname\":");
    str_or_null(w, r->replaced.qualname, sizeof r->replaced.qualname);
    tg_w_str(w, ",\"file\":");
    str_or_null(w, r->replaced.file, sizeof r->replaced.file);
    tg_w_str(w, ",\"line\":");
    if (r->replaced.line > 0)
        tg_w_i64(w, r->replaced.line);
    else
        tg_w_str(w, "null");
    tg_w_str(w, "},\"entering\":");
    thread(w, r, &r->entering);
}

static void json_repeats(struct tg_w *w, const struct tg_report *r, const struct tg_report_kind_info *k)
{
    common(w, r, k->json);
    tg_w_str(w, ",\"race_seq\":");
    tg_w_u64(w, r->race_seq);
    tg_w_str(w, ",\"repeats\":");
    tg_w_u64(w, r->repeats);
    if ((unsigned)r->repeat_of < TG_REPORT_NKINDS) {
        tg_w_str(w, ",\"of\":\"");
        tg_w_str(w, tg_report_kinds[r->repeat_of].json);
        tg_w_char(w, '"');
    }
    tg_w_str(w, ",\"other_kernels\":");
    tg_w_u64(w, (uint64_t)(r->other_kernels > 0 ? r->other_kernels : 0));
    tg_w_str(w, ",\"other_kernel_names\":[");
    for (int i = 0; i < 3 && i < r->other_kernels && r->other_names[i][0]; i++) {
        if (i)
            tg_w_char(w, ',');
        J_STR(w, r->other_names[i]);
    }
    tg_w_char(w, ']');
}

int tg_report_write_jsonl(int fd, const struct tg_report *r)
{
    struct tg_w w;
    tg_w_init(&w, fd);
    const struct tg_report_kind_info *k = (unsigned)r->kind < TG_REPORT_NKINDS ? &tg_report_kinds[r->kind] : NULL;
    switch (r->kind) {
#define TG_REPORT_KIND(ID, json, title, what, body, supp, flags, exit) \
    case TG_REPORT_##ID:                                             \
        json_##body(&w, r, k);                                       \
        break;
#include "core/report_kinds.inc"
#undef TG_REPORT_KIND
    case TG_REPORT_NKINDS:
        break;
    }
    tg_w_str(&w, "}\n");
    return tg_w_flush(&w);
}
