/* The report pipeline (reports/emit.c) and the exit line it feeds
 * (loader/py_arm.c): suppression, severity, de-duplication, the counts, the
 * process's one sequence number, and the line's wording for every kind in the
 * order of core/report_kinds.inc. */
#include "jsonl_check.h"
#include "core/options.h"
#include "core/process.h"
#include "reports/emit.h"
#include "reports/stack_fold.h"
#include "reports/suppress_load.h"
#include "loader/py_arm.h"
#include "detectors/tuner_table.h"

static char dir[64];
static char errpath[128];
static char prefix[128];

/* Reports into a fresh directory, stderr captured into a file there. */
static void setup(void)
{
    fx_scratch_dir(dir, sizeof dir, "emit");
    snprintf(errpath, sizeof errpath, "%s/stderr.log", dir);
    fx_capture_stderr(errpath);
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
}

static struct tg_report r;

/* dir/<fmt with this pid> */
static const char *path_in(const char *d, const char *fmt)
{
    static char p[256], name[128];
    snprintf(name, sizeof name, fmt, (long)getpid());
    snprintf(p, sizeof p, "%s/%s", d, name);
    return p;
}

static uint64_t emit_kind(enum tg_report_kind kind, enum tg_emit_status *st)
{
    fx_race_high(&r);
    r.kind = kind;
    return tg_emit(&r, st);
}

Test(emit, seq_counts_and_repeats, .init = setup)
{
    enum tg_emit_status st;
    fx_race_high(&r);
    cr_assert_eq(tg_emit(&r, &st), 1);
    cr_assert_eq(st, TG_EMIT_WRITTEN);
    fx_race_high(&r);
    cr_assert_eq(tg_emit(&r, &st), 0, "the same race again is a repeat");
    cr_assert_eq(st, TG_EMIT_REPEAT);
    fx_race_high(&r);
    r.seen_at_exit = 1;
    cr_assert_eq(tg_emit(&r, &st), 2, "seen at exit is not a repeat of the one seen at entry");
    fx_race_low(&r);
    cr_assert_eq(tg_emit(&r, &st), 0, "a low-severity overlap at verbosity 0 is only counted");
    cr_assert_eq(st, TG_EMIT_HIDDEN);
    cr_assert_eq(emit_kind(TG_REPORT_EXCEPTION, &st), 3);
    /* the fatal path takes its seq from the same counter */
    cr_assert_eq(__atomic_add_fetch(tg_emit_seq_counter(), 1, __ATOMIC_RELAXED), 4);
    cr_assert_eq(emit_kind(TG_REPORT_DEADLOCK, &st), 5);
    struct tg_emit_stats s;
    tg_emit_stats(&s);
    cr_assert_eq(s.written[TG_REPORT_RACE], 2);
    cr_assert_eq(s.races_seen, 3, "repeats are seen, not written");
    cr_assert_eq(s.overlaps, 1);
    cr_assert_eq(s.written[TG_REPORT_EXCEPTION], 1);
    cr_assert_eq(s.written[TG_REPORT_DEADLOCK], 1);
    cr_assert_eq(s.reports, 5);
    char *txt = fx_read_file(path_in(dir, "tg.%ld.txt"));
    cr_assert_not_null(strstr(txt, "WARNING: tunerguard: cycle of serialized waits (deadlock) (pid="), "%s", txt);
    free(txt);
}

Test(emit, suppressed_reports_are_neither_written_nor_counted, .init = setup)
{
    char supp[160], err[300];
    snprintf(supp, sizeof supp, "%s/supp.txt", dir);
    FILE *f = fopen(supp, "w");
    fprintf(f, "race:%s\n", "*");
    fclose(f);
    cr_assert_eq(tg_supp_load(supp, err, sizeof err), 0, "%s", err);
    enum tg_emit_status st;
    fx_race_high(&r);
    cr_assert_eq(tg_emit(&r, &st), 0);
    cr_assert_eq(st, TG_EMIT_SUPPRESSED);
    fx_race_low(&r);
    cr_assert_eq(tg_emit(&r, &st), 0);
    cr_assert_eq(st, TG_EMIT_SUPPRESSED, "a suppressed overlap is not even counted as one");
    cr_assert_eq(emit_kind(TG_REPORT_WAIT_TIMEOUT, &st), 1, "race: lines do not touch other kinds");
    struct tg_emit_stats s;
    tg_emit_stats(&s);
    cr_assert_eq(s.races_seen + s.overlaps + s.written[TG_REPORT_RACE], 0);
    cr_assert_eq(s.reports, 1);
}

/* One report of every kind (two races, one a repeat; an overlap): the exit
 * line names each in the table's order, with its option values. */
Test(emit, exit_line_wording, .init = setup)
{
    enum tg_emit_status st;
    fx_race_high(&r);
    tg_emit(&r, &st);
    fx_race_high(&r);
    tg_emit(&r, &st);
    fx_race_low(&r);
    tg_emit(&r, &st);
    fx_race_high(&r); /* serialize: the wait prevented it (another tuner: not a repeat) */
    r.serialized = 1;
    r.instance = 0x7f3a1c2b5e20;
    cr_assert_gt(tg_emit(&r, &st), 0);
    for (int k = 0; k < TG_REPORT_NKINDS; k++)
        if (k != TG_REPORT_RACE)
            emit_kind((enum tg_report_kind)k, &st);
    tg_arm_exit_summary();
    tg_arm_exit_summary(); /* once */
    char *e = fx_read_file(errpath);
    char want[900];
    snprintf(want, sizeof want,
             "tunerguard: 1 race reported (2 seen), 1 exception linked to them; "
             "1 race prevented by serialize (1 seen); 1 benchmark timed under load; "
             "1 cycle of waits broken (deadlock=proceed); 1 thread died inside a tuner (holds released); "
             "1 wait longer than %d s; 1 overlap on already tuned keys (low severity, verbosity=1 shows them); "
             "reports in %s/tg.%ld.txt\n",
             tg_opts.wait_timeout, dir, (long)getpid());
    cr_assert_str_eq(e, want);
    free(e);
    struct tg_emit_stats s;
    tg_emit_stats(&s);
    cr_assert_eq(s.prevented_reports, 1, "the prevented race leaves exitcode= alone");
}

Test(emit, exit_line_silent_without_reports, .init = setup)
{
    tg_emit_count_overlap();
    tg_arm_exit_summary();
    char *e = fx_read_file(errpath);
    cr_assert_str_eq(e, "", "overlaps alone are the normal life of a tuned kernel");
    free(e);
}

/* The overlaps counted on the tuners (guard/race_decide.c), those of a
 * tuner whose entry was given back included, are in the exit line. */
Test(emit, exit_line_counts_the_tuners_overlaps, .init = setup)
{
    enum tg_emit_status st;
    fx_race_high(&r);
    tg_emit(&r, &st);
    struct tg_tuner *u = tg_tuner_get(0x7f3a1c2b7e40);
    u->overlaps = 3;
    tg_tuner_release_if_unused(u);
    tg_tuner_get(0x7f3a1c2b8e40)->overlaps = 1;
    tg_arm_exit_summary();
    char *e = fx_read_file(errpath);
    cr_assert(strstr(e, "; 4 overlaps on already tuned keys (low severity, verbosity=1 shows them)"), "%s", e);
    free(e);
}

/* Tuning under load is one report per tuner and kernel, whatever the call
 * sites (4 to 8 benchmarks of one kernel are timed under load where one is):
 * the other benchmarks are counted on the exit line and in one "repeats"
 * record at exit.  Informational: it does not fail the run (exitcode=). */
Test(emit, interference_once_per_kernel_counted_at_exit, .init = setup)
{
    enum tg_emit_status st;
    cr_assert_eq(emit_kind(TG_REPORT_INTERFERENCE, &st), 1);
    for (int i = 0; i < 2; i++) {
        fx_race_high(&r);
        r.kind = TG_REPORT_INTERFERENCE;
        r.entering.py[2].line = 90 + i; /* another call site, the same kernel */
        cr_assert_eq(tg_emit(&r, &st), 0, "benchmark %d of the same kernel", i + 2);
        cr_assert_eq(st, TG_EMIT_REPEAT);
    }
    fx_race_high(&r);
    r.kind = TG_REPORT_INTERFERENCE;
    snprintf(r.kernel, sizeof r.kernel, "other_kernel");
    cr_assert_eq(tg_emit(&r, &st), 2, "another kernel: its own report");
    struct tg_emit_stats s;
    tg_emit_stats(&s);
    cr_assert_eq(s.failing, 0, "tuning under load is informational");
    tg_arm_exit_summary();
    char *e = fx_read_file(errpath);
    cr_assert(strstr(e, "tunerguard: 4 benchmarks timed under load (2 kernels, one report each); "), "%s", e);
    free(e);
    char *txt = fx_read_file(path_in(dir, "tg.%ld.txt"));
    cr_assert(strstr(txt, "  2 more benchmarks of this kernel timed under load after report #1;"), "%s", txt);
    free(txt);
    char *js = fx_read_file(path_in(dir, "tg.%ld.jsonl"));
    cr_assert(strstr(js, "\"race_seq\":1,\"repeats\":2,\"of\":\"interference\""), "%s", js);
    free(js);
}

/* The rule of exitcode= (and of `tunerguard report`'s status): races and the
 * other problems fail the run; informational kinds and prevented races do
 * not, unless prevented_is_race=1. */
Test(emit, failing_rule)
{
    cr_assert(tg_report_fails(TG_REPORT_RACE, 0, 0, 0));
    cr_assert(!tg_report_fails(TG_REPORT_RACE, 1, 0, 0), "prevented");
    cr_assert(tg_report_fails(TG_REPORT_RACE, 1, 0, 1), "prevented_is_race=1");
    cr_assert(!tg_report_fails(TG_REPORT_RACE, 0, 1, 0), "a low-severity overlap");
    cr_assert(tg_report_fails(TG_REPORT_EXCEPTION, 0, 0, 0));
    cr_assert(tg_report_fails(TG_REPORT_DEADLOCK, 0, 0, 0));
    cr_assert(!tg_report_fails(TG_REPORT_INTERFERENCE, 0, 0, 0));
    cr_assert(!tg_report_fails(TG_REPORT_METHOD_REPLACED, 0, 0, 0));
    cr_assert(!tg_report_fails(TG_REPORT_REPEATS, 0, 0, 0));
    cr_assert_eq(tg_report_kind_of_json("interference"), TG_REPORT_INTERFERENCE);
    cr_assert_eq(tg_report_kind_of_json("fatal"), TG_REPORT_NKINDS);
}

/* serialize: a prevented race is written once per site; a race at the same
 * site that was not prevented is not its repeat: written, and it fails the
 * run. */
Test(emit, prevented_and_real_race_at_one_site, .init = setup)
{
    enum tg_emit_status st;
    fx_race_high(&r);
    r.serialized = 1;
    cr_assert_eq(tg_emit(&r, &st), 1);
    fx_race_high(&r);
    r.serialized = 1;
    cr_assert_eq(tg_emit(&r, &st), 0, "the same prevented race again");
    cr_assert_eq(st, TG_EMIT_REPEAT);
    fx_race_high(&r);
    cr_assert_eq(tg_emit(&r, &st), 2, "not prevented this time: its own report");
    struct tg_emit_stats s;
    tg_emit_stats(&s);
    cr_assert_eq(s.failing, 1, "the race that happened fails the run");
}

/* serialize on a model's forward: the same pair of call sites (the
 * program's lines, whatever library functions lie between) makes threads
 * wait on one kernel after another.  One prevented report; the repeats
 * record names the other kernels (three by name) and counts them, each
 * once however often it was seen again.  A race that was not prevented
 * stays one report per kernel. */
Test(emit, prevented_race_once_per_call_sites, .init = setup)
{
    enum tg_emit_status st;
    fx_race_high(&r);
    r.serialized = 1;
    cr_assert_eq(tg_emit(&r, &st), 1);
    for (int i = 0; i < 10; i++) {
        fx_race_high(&r);
        r.serialized = 1;
        r.instance += 0x100 * (uintptr_t)(1 + i % 5);
        snprintf(r.kernel, sizeof r.kernel, "kernel_%d", i % 5);
        /* each kernel reached through a library function of its own, from one line of the program */
        snprintf(r.entering.py[1].file, sizeof r.entering.py[1].file, "/usr/lib/python3/site-packages/fla/ops/k%d.py",
                 i % 5);
        cr_assert_eq(tg_emit(&r, &st), 0, "kernel_%d at the same call sites", i % 5);
        cr_assert_eq(st, TG_EMIT_REPEAT);
    }
    fx_race_high(&r);
    snprintf(r.kernel, sizeof r.kernel, "kernel_0");
    r.instance += 0x100;
    cr_assert_eq(tg_emit(&r, &st), 2, "not prevented: its own report");
    fx_race_high(&r);
    snprintf(r.kernel, sizeof r.kernel, "kernel_1");
    r.instance += 0x200;
    cr_assert_eq(tg_emit(&r, &st), 3, "not prevented, another kernel: its own report");
    tg_emit_flush_repeats();
    char *txt = fx_read_file(path_in(dir, "tg.%ld.txt"));
    cr_assert(strstr(txt, "  Report #1 of this process: serialize prevented the same race 10 more times at the same"
                          " call sites,\n  also on 5 other kernels: 'kernel_0', 'kernel_1', 'kernel_2' and 2 more;\n"),
              "%s", txt);
    free(txt);
    char *js = fx_read_file(path_in(dir, "tg.%ld.jsonl"));
    cr_assert(strstr(js, "\"race_seq\":1,\"repeats\":10,\"of\":\"race\",\"other_kernels\":5,"
                         "\"other_kernel_names\":[\"kernel_0\",\"kernel_1\",\"kernel_2\"]"),
              "%s", js);
    free(js);
    const char *const ex[] = {"4:other_kernels=5", NULL};
    cr_assert_eq(run_jsonl_checker(path_in(dir, "tg.%ld.jsonl"), 4, ex), 0, "check_jsonl.py");
}

/* A prevented race seen again on its own kernel, whose name is longer than
 * most (Inductor's and fla's run past 64 characters): a repeat of the same
 * kernel, never an "other kernel" of itself. */
Test(emit, prevented_race_long_kernel_name_is_its_own, .init = setup)
{
    enum tg_emit_status st;
    char name[sizeof r.kernel];
    memset(name, 'k', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    memcpy(name, "triton_per_fused_", 17);
    for (int i = 0; i < 3; i++) {
        fx_race_high(&r);
        r.serialized = 1;
        snprintf(r.kernel, sizeof r.kernel, "%s", name);
        cr_assert_eq(tg_emit(&r, &st), i == 0 ? 1 : 0, "call %d", i);
    }
    tg_emit_flush_repeats();
    char *txt = fx_read_file(path_in(dir, "tg.%ld.txt"));
    cr_assert(strstr(txt, "serialize prevented the same race 2 more times at the same call sites"), "%s", txt);
    cr_assert(!strstr(txt, "other kernel"), "%s", txt);
    free(txt);
    char *js = fx_read_file(path_in(dir, "tg.%ld.jsonl"));
    cr_assert(strstr(js, "\"race_seq\":1,\"repeats\":2,\"of\":\"race\",\"other_kernels\":0"), "%s", js);
    free(js);
}

/* The thread inside called from a library (no frame of the program below
 * its tuner), caught at two lines of a hook of the program's that its
 * benchmark runs: the same race at the same call sites, one report.  Where
 * a capture falls inside the benchmark does not tell races apart. */
static void inside_in_hook(struct tg_report *rr, int line)
{
    fx_race_high(rr);
    struct tg_thread_view *in = &rr->inside;
    in->npy = 0;
    fx_py(in, "pre_hook", "hooks.py", line);
    fx_py(in, "_bench", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 143);
    fx_py(in, "run", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 171);
    fx_py(in, "forward", "/usr/lib/python3/site-packages/fla/models/model.py", 210);
    fx_py(in, "run", "/usr/lib/python3.11/threading.py", 975);
}

Test(emit, race_site_ignores_hook_frames_above_the_tuner, .init = setup)
{
    enum tg_emit_status st;
    inside_in_hook(&r, 10);
    cr_assert_eq(tg_emit(&r, &st), 1);
    inside_in_hook(&r, 20);
    cr_assert_eq(tg_emit(&r, &st), 0, "the same race, caught at another line of the hook");
    cr_assert_eq(st, TG_EMIT_REPEAT);
}

/* A call made from inside another tuner's call (a config's pre_hook that
 * launches another autotuned kernel), as its stack is taken at its entry:
 * its call site is the hook's line, below the first run of tuner frames,
 * not the outer kernel's call.  The same frames taken deep inside a call
 * (a thread blocked in its benchmark) keep the outermost rule: a hook the
 * tuner runs is not where the program called it. */
Test(emit, nested_call_site_at_entry_is_the_hook, .init = setup)
{
    fx_race_high(&r);
    struct tg_thread_view *e = &r.entering;
    e->npy = 0;
    fx_py(e, "<lambda>", "/usr/lib/python3/site-packages/triton/runtime/jit.py", 390);
    fx_py(e, "init_out", "/home/me/prog.py", 22);
    fx_py(e, "_bench", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 143);
    fx_py(e, "run", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 171);
    fx_py(e, "<lambda>", "/usr/lib/python3/site-packages/triton/runtime/jit.py", 390);
    fx_py(e, "main", "/home/me/prog.py", 33);
    snprintf(e->native_where, sizeof e->native_where, "at entry");
    int i = tg_site_frame(&r, e);
    cr_assert(i >= 0 && e->py[i].line == 22, "at entry: the hook's line, got frame %d", i);
    snprintf(e->native_where, sizeof e->native_where, "in cuCtxSynchronize_v2");
    i = tg_site_frame(&r, e);
    cr_assert(i >= 0 && e->py[i].line == 33, "deep inside: below the outermost tuner frame, got frame %d", i);
}

/* A thread whose race is seen at its return (its call on a tuned key left
 * the tuner while another thread benchmarked in it), the call made from a
 * hook of the program's that an outer tuner ran: its stack is its caller's,
 * as at entry, and still holds the outer tuner's frames and the program's
 * hook they called.  Its call site is the hook's line, below the run of
 * tuner frames the call ends in, as at entry; not the outer kernel's call
 * below the outermost tuner frame, the rule for a stack taken deep inside. */
Test(emit, nested_call_site_at_return_is_the_hook, .init = setup)
{
    fx_race_high(&r);
    struct tg_thread_view *in = &r.inside;
    in->npy = 0;
    fx_py(in, "<lambda>", "/usr/lib/python3/site-packages/triton/runtime/jit.py", 390);
    fx_py(in, "init_out", "/home/me/prog.py", 22);
    fx_py(in, "helper", "/usr/lib/python3/site-packages/fla/utils.py", 7);
    fx_py(in, "_bench", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 143);
    fx_py(in, "run", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 171);
    fx_py(in, "<lambda>", "/usr/lib/python3/site-packages/triton/runtime/jit.py", 390);
    fx_py(in, "main", "/home/me/prog.py", 33);
    snprintf(in->native_where, sizeof in->native_where, "at return");
    int i = tg_site_frame(&r, in);
    cr_assert(i >= 0 && in->py[i].line == 22, "at return: the hook's line, as at entry, got frame %d", i);
    r.seen_at_exit = 1;
    r.entering = *in;
    snprintf(r.entering.native_where, sizeof r.entering.native_where, "at return");
    i = tg_summary_frame(&r);
    cr_assert(i >= 0 && r.entering.py[i].line == 22, "the SUMMARY line names the hook's line, got frame %d", i);
}

/* A kernel library outside the program's folder (a source folder on
 * PYTHONPATH, an editable install): reports/py_program.c's verdict says its
 * files are not the program's.  The call site is then the program's line
 * below the library, and kernels reached through different library lines
 * from that one line are one prevented race; without the verdict the
 * library's line is the call site, one report per kernel. */
static void from_source_library(struct tg_report *rr, int k)
{
    fx_race_high(rr);
    rr->serialized = 1;
    rr->instance += 0x100 * (uintptr_t)(1 + k);
    snprintf(rr->kernel, sizeof rr->kernel, "kernel_%d", k);
    for (int t = 0; t < 2; t++) {
        struct tg_thread_view *v = t ? &rr->inside : &rr->entering;
        v->npy = 0;
        if (t)
            fx_py(v, "run", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 171);
        fx_py(v, "norm", "/src/fla/modules/layernorm.py", 500 + k);
        fx_py(v, "forward", "/src/fla/models/model.py", 210);
        fx_py(v, "step", "/home/me/train.py", 41);
        fx_py(v, "run", "/usr/lib/python3.11/threading.py", 975);
    }
}

Test(emit, source_library_is_no_call_site, .init = setup)
{
    enum tg_emit_status st;
    from_source_library(&r, 0);
    cr_assert_eq(tg_frame_class(&r, &r.entering.py[0]), TG_FC_PROGRAM, "no verdict: the path rules alone");
    tg_stack_set_file_program("/src/fla/modules/layernorm.py", 0);
    tg_stack_set_file_program("/src/fla/models/model.py", 0);
    tg_stack_set_file_program("/home/me/train.py", 1);
    cr_assert_eq(tg_stack_file_program("/src/fla/models/model.py"), 0);
    cr_assert_eq(tg_stack_file_program("/home/me/train.py"), 1);
    cr_assert_eq(tg_stack_file_program("/home/me/other.py"), -1);
    cr_assert_eq(tg_frame_class(&r, &r.entering.py[0]), TG_FC_LIBRARY);
    cr_assert_eq(tg_frame_class(&r, &r.entering.py[2]), TG_FC_PROGRAM);
    int i = tg_site_frame(&r, &r.entering);
    cr_assert(i == 2, "the program's line below the library, got frame %d", i);
    cr_assert_eq(tg_emit(&r, &st), 1);
    for (int k = 1; k < 10; k++) {
        from_source_library(&r, k);
        cr_assert_eq(tg_emit(&r, &st), 0, "kernel_%d: the same call sites", k);
    }
    tg_stack_forget_files();
    from_source_library(&r, 10);
    cr_assert_eq(tg_emit(&r, &st), 2, "without the verdicts: the library's line, a report of its own");
}

static int count_of(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* A program that builds its tuner inside a function makes a new instance
 * every call: the same kernel of the same tuner class, at the same call
 * sites, is one bug however many instances it went through.  Another tuner
 * class, or another kernel, is another. */
Test(emit, dedupe_ignores_the_instance, .init = setup)
{
    enum tg_emit_status st;
    fx_race_high(&r);
    cr_assert_eq(tg_emit(&r, &st), 1);
    for (int i = 1; i <= 50; i++) {
        fx_race_high(&r);
        r.instance += 0x1000 * (uintptr_t)i; /* a new Autotuner every call */
        cr_assert_eq(tg_emit(&r, &st), 0, "instance %d of one tuner, one kernel, one call site", i);
        cr_assert_eq(st, TG_EMIT_REPEAT);
    }
    fx_race_high(&r);
    snprintf(r.tuner_class, sizeof r.tuner_class, "fla.ops.utils.cache.CachedAutotuner");
    cr_assert_eq(tg_emit(&r, &st), 2, "another tuner class: its own report");
    fx_race_high(&r);
    snprintf(r.kernel, sizeof r.kernel, "other_kernel");
    cr_assert_eq(tg_emit(&r, &st), 3, "another kernel: its own report");
    tg_arm_exit_summary();
    char *e = fx_read_file(errpath);
    cr_assert(strstr(e, "tunerguard: 3 races reported (53 seen)"), "%s", e);
    free(e);
    char *js = fx_read_file(path_in(dir, "tg.%ld.jsonl"));
    cr_assert(strstr(js, "\"race_seq\":1,\"repeats\":50,\"of\":\"race\""), "%s", js);
    free(js);
}

/* Tuning under load of one kernel through many tuner instances and two
 * tuner classes: the exit line counts one kernel, by its name. */
Test(emit, exit_line_counts_load_kernels_by_name, .init = setup)
{
    enum tg_emit_status st;
    for (int i = 0; i < 20; i++) {
        fx_race_high(&r);
        r.kind = TG_REPORT_INTERFERENCE;
        r.instance += 0x1000 * (uintptr_t)i;
        if (i % 2)
            snprintf(r.tuner_class, sizeof r.tuner_class, "fla.ops.utils.cache.CachedAutotuner");
        tg_emit(&r, &st);
    }
    tg_arm_exit_summary();
    char *e = fx_read_file(errpath);
    cr_assert(strstr(e, "tunerguard: 20 benchmarks timed under load (1 kernel, one report each); "), "%s", e);
    free(e);
}

/* report_cap: what one process writes is bounded; past the cap reports are
 * counted (and still fail the run), and the exit line says how many were
 * not written. */
Test(emit, report_cap_counts_the_rest, .init = setup)
{
    tg_opts.report_cap = 2;
    enum tg_emit_status st;
    for (int i = 0; i < 5; i++) {
        fx_race_high(&r);
        snprintf(r.kernel, sizeof r.kernel, "kernel_%d", i);
        uint64_t seq = tg_emit(&r, &st);
        if (i < 2) {
            cr_assert_eq(seq, (uint64_t)i + 1);
        } else {
            cr_assert_eq(seq, 0, "report %d is past the cap", i + 1);
            cr_assert_eq(st, TG_EMIT_CAPPED);
        }
    }
    fx_race_high(&r);
    snprintf(r.kernel, sizeof r.kernel, "kernel_4");
    tg_emit(&r, &st);
    cr_assert_eq(st, TG_EMIT_REPEAT, "a repeat of one past the cap is a repeat, not another");
    struct tg_emit_stats s;
    tg_emit_stats(&s);
    cr_assert_eq(s.reports, 2);
    cr_assert_eq(s.capped, 3);
    cr_assert_eq(s.failing, 5, "exitcode= sees every race, written or not");
    tg_arm_exit_summary();
    char *txt = fx_read_file(path_in(dir, "tg.%ld.txt"));
    cr_assert_eq(count_of(txt, "WARNING: tunerguard"), 2, "%s", txt);
    free(txt);
    char *e = fx_read_file(errpath);
    cr_assert(strstr(e, "tunerguard: 2 races reported (6 seen); 3 more reports not written (report_cap=2); "
                        "reports in "), "%s", e);
    free(e);
}

/* serialize that only prevented races: the line says that first, not "0
 * races reported (0 seen)"; and a run with no race at all does not begin
 * with one either. */
Test(emit, exit_line_prevented_only, .init = setup)
{
    enum tg_emit_status st;
    fx_race_high(&r);
    r.serialized = 1;
    cr_assert_eq(tg_emit(&r, &st), 1);
    tg_arm_exit_summary();
    char *e = fx_read_file(errpath);
    static const char want[] = "tunerguard: 1 race prevented by serialize (1 seen); reports in ";
    cr_assert(strncmp(e, want, sizeof want - 1) == 0, "%s", e);
    free(e);
}
