/* The race summary of the text report.  See text_summary.h. */
#include "reports/text_summary.h"
#include "reports/report_internal.h"
#include "reports/stack_fold.h"

#define W_FIELD(w, field) tg_w_text((w), (field), TG__FIELD_SIZE(field))

/* "thread 'NAME'", or "thread tid=N" where it has no Python name */
static void thread_word(struct tg_w *w, const struct tg_thread_view *v)
{
    if (!v->name[0]) {
        tg_w_str(w, "thread tid=");
        tg_w_i64(w, v->tid);
        return;
    }
    tg_w_str(w, "thread '");
    W_FIELD(w, v->name);
    tg_w_char(w, '\'');
}

/* The frame a thread called the tuner from (tg_site_frame: the one reports
 * are told apart by); NULL if it has none. */
static const struct tg_py_frame *site_of(const struct tg_report *r, const struct tg_thread_view *v)
{
    int i = tg_site_frame(r, v);
    return i >= 0 ? &v->py[i] : NULL;
}

static void file_line(struct tg_w *w, const struct tg_py_frame *f)
{
    W_FIELD(w, f->file);
    tg_w_char(w, ':');
    tg_w_i64(w, f->line);
}

/* " at FILE:LINE in FUNC" or " (call site unknown)" */
static void site(struct tg_w *w, const struct tg_py_frame *f)
{
    if (!f) {
        tg_w_str(w, " (call site unknown)");
        return;
    }
    tg_w_str(w, " at ");
    file_line(w, f);
    tg_w_str(w, " in ");
    W_FIELD(w, f->func);
}

/* "kernel 'K' (tuner CLASS, method M)"; "tuner CLASS (method M)" where the
 * tuner names no kernel (a declared tuner, a kernel without __name__) */
static void what_tuner(struct tg_w *w, const struct tg_report *r)
{
    const int kernel = r->kernel[0] && !(r->kernel[0] == '?' && r->kernel[1] == '\0');
    if (kernel) {
        tg_w_str(w, "kernel '");
        W_FIELD(w, r->kernel);
        tg_w_str(w, "' (");
    }
    tg_w_str(w, "tuner ");
    if (r->tuner_class[0])
        W_FIELD(w, r->tuner_class);
    else
        tg_w_str(w, "of unknown class");
    tg_w_str(w, kernel ? ", method " : " (method ");
    if (r->method[0])
        W_FIELD(w, r->method);
    else
        tg_w_str(w, "unknown");
    tg_w_char(w, ')');
}

static void effect(struct tg_w *w, const struct tg_report *r)
{
    tg_w_str(w, "  What it does: ");
    if (r->serialized)
        tg_w_str(w, "nothing: serialize mode made the second thread wait until the tuner was free;"
                    " the two calls did not overlap.\n");
    else if (r->seen_at_tuning)
        tg_w_str(w, "the other call's return cleared the arguments this call set on the shared tuner"
                    " (self.nargs = None): TypeError: 'NoneType' object is not a mapping in its benchmark.\n");
    else if (r->seen_at_exit) {
        tg_w_str(w, tg__text_returned_first(r) ? "the earlier call's return" : "the later call's return");
        tg_w_str(w, " cleared the arguments on the shared tuner (self.nargs = None)"
                    " that the benchmarking thread reads next: TypeError: 'NoneType' object is not a mapping"
                    " in its benchmark, or a benchmark on the other call's tensors.\n");
    } else if (r->declared && r->high_severity) {
        tg_w_str(w, "both calls ran at once in a tuner declared with targets= (");
        W_FIELD(w, r->method);
        tg_w_str(w, "): the per-call state it keeps on the shared object can be cleared or replaced by one call"
                    " under the other");
        tg_w_str(w, r->inside.benchmarking ? "; and what it times runs under load.\n" : ".\n");
    } else if (r->high_severity && r->without_gil && !r->inside.benchmarking)
        tg_w_str(w, "both calls ran at once (the GIL was off): each writes its arguments on the shared tuner"
                    " (self.nargs) and clears them as it returns, tuned key or not, so one call's return clears"
                    " the other's (TypeError: 'NoneType' object is not a mapping) or its start replaces them,"
                    " and a config pre_hook or a launch then runs on the other call's tensors.\n");
    else if (r->high_severity)
        tg_w_str(w, "the arguments the benchmarking thread keeps on the shared tuner can be cleared"
                    " (TypeError: 'NoneType' object is not a mapping) or replaced by the other call's under it;"
                    " tensors named in reset_to_zero/restore_value can be zeroed or overwritten while the"
                    " other call uses them; and the configs it times run under load.\n");
    else if (r->declared)
        tg_w_str(w, "little so far: the thread inside was not in the tuner's tuning step (tuning=); the same"
                    " overlap while it is can clear or replace the state it keeps on the shared object.\n");
    else
        tg_w_str(w, "little so far: the thread inside was on the fast path of a tuned key, nothing was"
                    " benchmarking; the same overlap during a benchmark clears its arguments.\n");
}

static void fix(struct tg_w *w, const struct tg_report *r, const struct tg_py_frame *at)
{
    if (r->serialized) {
        tg_w_str(w, "  What to do: nothing while mode=serialize stays on; to avoid the wait, ");
    } else if (r->without_gil) {
        tg_w_str(w, "  What to do: run with TUNERGUARD_OPTIONS=mode=serialize (without the GIL it holds the"
                    " tuner's lock on every call); or ");
    } else {
        tg_w_str(w, "  What to do: run with TUNERGUARD_OPTIONS=mode=serialize; or ");
    }
    if (r->without_gil) {
        /* every call writes the arguments, tuned key or not: a first call
         * made alone does not help */
        tg_w_str(w, "hold one lock around ");
        if (at)
            file_line(w, at);
        else
            tg_w_str(w, "the call");
        tg_w_str(w, " (a first call made from one thread beforehand does not help: every call writes and clears"
                    " the arguments).\n");
    } else if (at && r->declared && !r->step[0]) {
        /* every overlap of a declared tuner's calls is a race: a first call
         * made alone does not help */
        tg_w_str(w, "hold one lock around ");
        file_line(w, at);
        tg_w_str(w, "; or name the tuner's tuning step (tuning=) if only overlaps inside it do harm.\n");
    } else if (at) {
        tg_w_str(w, "call ");
        file_line(w, at);
        tg_w_str(w, " once from one thread before starting the others; or hold one lock around ");
        file_line(w, at);
        tg_w_str(w, ".\n");
    } else if (r->declared) {
        tg_w_str(w, "hold one lock around the call.\n");
    } else {
        tg_w_str(w, "let one thread make the first call of the kernel before starting the others; or hold"
                    " one lock around the call.\n");
    }
}

void tg__text_race_summary(struct tg_w *w, const struct tg_report *r)
{
    const struct tg_thread_view *e = &r->entering, *in = &r->inside;
    const struct tg_py_frame *es = site_of(r, e), *is = site_of(r, in);
    tg_w_str(w, "  In short: ");
    what_tuner(w, r);
    tg_w_str(w, "\n    called by ");
    thread_word(w, e);
    site(w, es);
    if (r->seen_at_step) {
        tg_w_str(w, ", entering its tuning step ");
        W_FIELD(w, r->step);
    }
    if (r->seen_at_tuning) {
        tg_w_str(w, ",\n    began tuning after another call on the same tuner entered and returned during"
                    " its call (a thread switch while it computed its key).\n");
        effect(w, r);
        fix(w, r, es);
        tg_w_char(w, '\n');
        return;
    }
    tg_w_str(w, "\n    while ");
    thread_word(w, in);
    tg_w_str(w, ", called");
    site(w, is);
    if (r->seen_at_step) {
        tg_w_str(w, ", was inside it.\n");
    } else if (r->seen_at_exit) {
        tg_w_str(w, ", returned from it.\n");
    } else if (r->step[0]) {
        tg_w_str(w, ", was inside it in its tuning step ");
        W_FIELD(w, r->step);
        tg_w_str(w, ".\n");
    } else if (in->benchmarking) {
        tg_w_str(w, ", was inside it benchmarking.\n");
    } else {
        tg_w_str(w, ", was inside it.\n");
    }
    effect(w, r);
    fix(w, r, es ? es : is);
    tg_w_char(w, '\n');
}
