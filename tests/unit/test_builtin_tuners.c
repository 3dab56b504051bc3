/* The built-in tuner families (core/builtin_tuners.inc, read through
 * core/builtin_tuners.h): the facts the guard and the reports take from the
 * table, pinned to what tunerguard does with Triton's Autotuner and
 * Inductor's CachingAutotuner (docs/tuners.md, docs/triton-versions.md). */
#include <criterion/criterion.h>

#include <string.h>

#include "core/builtin_tuners.h"
#include "detectors/tuner_table.h"

Test(builtin_tuners, families_and_their_rules)
{
    cr_assert_eq(TG_TUNER_NFAMILIES, 2);
    const struct tg_tuner_family_def *t = tg_tuner_family(TG_TUNER_TRITON);
    const struct tg_tuner_family_def *i = tg_tuner_family(TG_TUNER_INDUCTOR);
    cr_assert_str_eq(t->module, "triton.runtime.autotuner");
    cr_assert_str_eq(t->cls, "Autotuner");
    cr_assert_eq(t->clears_args, 1, "Autotuner.run ends with self.nargs = None");
    cr_assert_str_eq(i->module, "torch._inductor.runtime.triton_heuristics");
    cr_assert_str_eq(i->cls, "CachingAutotuner");
    cr_assert_eq(i->clears_args, 0, "CachingAutotuner keeps no per-call arguments that its return clears");
    cr_assert_null(tg_tuner_family(TG_TUNER_NFAMILIES));
    cr_assert_null(tg_tuner_family(-1));
}

Test(builtin_tuners, entry_points)
{
    cr_assert_eq(TG_TUNER_NENTRIES, 3, "Autotuner.run, Autotuner.warmup, CachingAutotuner.run");
    cr_assert(tg_tuner_entry_tunes(TG_TUNER_TRITON, "warmup"), "warmup benchmarks every config");
    cr_assert_not(tg_tuner_entry_tunes(TG_TUNER_TRITON, "run"));
    cr_assert_not(tg_tuner_entry_tunes(TG_TUNER_INDUCTOR, "run"));
    cr_assert_not(tg_tuner_entry_tunes(TG_TUNER_INDUCTOR, "warmup"), "a row of another family");
}

/* Marked on every built-in class, in this order. */
Test(builtin_tuners, tuning_methods)
{
    static const char *const want[] = {"_bench", "prune_configs", "check_disk_cache", "benchmark_all_configs",
                                       "autotune_to_one_config", "precompile", "coordinate_descent_tuning", "bench"};
    int n = 0;
    for (const char *s; (s = tg_tuner_step(n)) != NULL; n++) {
        cr_assert_lt(n, (int)(sizeof want / sizeof want[0]), "more steps than %zu: %s", sizeof want / sizeof want[0], s);
        cr_assert_str_eq(s, want[n]);
    }
    cr_assert_eq(n, (int)(sizeof want / sizeof want[0]));
    cr_assert_null(tg_tuner_step(-1));
    cr_assert(tg_tuner_step_reads_args(TG_TUNER_TRITON, "_bench"), "_bench reads self.nargs at once");
    cr_assert_not(tg_tuner_step_reads_args(TG_TUNER_TRITON, "prune_configs"),
                  "prune_configs may come before a run() override sets self.nargs");
    cr_assert_not(tg_tuner_step_reads_args(TG_TUNER_INDUCTOR, "_bench"));
    cr_assert_not(tg_tuner_step_reads_args(TG_TUNER_INDUCTOR, "benchmark_all_configs"));
}

Test(builtin_tuners, frames_that_show_tuning)
{
    static const char *const yes[] = {"_bench", "benchmark", "do_bench", "check_disk_cache", "prune_configs",
                                      "warmup", "benchmark_all_configs", "autotune_to_one_config",
                                      "coordinate_descent_tuning", "precompile"};
    static const char *const no[] = {"run", "bench", "__call__", "", "_bench_", "Autotuner._bench"};
    for (size_t k = 0; k < sizeof yes / sizeof yes[0]; k++)
        cr_assert(tg_tuning_frame(yes[k]), "%s shows tuning", yes[k]);
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++)
        cr_assert_not(tg_tuning_frame(no[k]), "'%s' does not", no[k]);
    cr_assert_not(tg_tuning_frame(NULL));
}

/* The one test of a thread's record (tg_thread_tuning) and the evidence
 * bits built on it. */
Test(builtin_tuners, thread_tuning_by_its_record)
{
    struct tg_thread t;
    memset(&t, 0, sizeof t);
    cr_assert_not(tg_thread_tuning(&t));
    cr_assert_eq(tg_thread_evidence(&t), 0);
    t.session_multi = 1;
    cr_assert_not(tg_thread_tuning(&t), "two launches are not tuning by themselves");
    cr_assert_eq(tg_thread_evidence(&t), TG_EV_LAUNCHES);
    t.session_multi = 0;
    t.tuning = 1;
    cr_assert(tg_thread_tuning(&t));
    cr_assert_eq(tg_thread_evidence(&t), TG_EV_TUNING);
    t.tuning = 0;
    t.session_tuned = 1;
    cr_assert(tg_thread_tuning(&t), "its session entered a tuning method and left it");
    t.session_tuned = 0;
    t.session_syncs = 1;
    cr_assert(tg_thread_tuning(&t), "its session synchronized");
}

/* The tuner's library files the reports fold and look below for the call
 * site. */
Test(builtin_tuners, library_files)
{
    static const char *const yes[] = {
        "/venv/lib/python3.12/site-packages/triton/runtime/autotuner.py",
        "/venv/lib/python3.12/site-packages/triton/runtime/jit.py",
        "/venv/lib/python3.12/site-packages/triton/testing.py",
        "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py",
    };
    static const char *const no[] = {
        "/home/u/model.py",
        "/venv/lib/python3.12/site-packages/triton/language/core.py",
        "/venv/lib/python3.12/site-packages/torch/_inductor/runtime/triton_heuristics.py",
        "/venv/lib/python3.12/threading.py",
    };
    for (size_t k = 0; k < sizeof yes / sizeof yes[0]; k++)
        cr_assert(tg_tuner_library_file(yes[k], strlen(yes[k])), "%s", yes[k]);
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++)
        cr_assert_not(tg_tuner_library_file(no[k], strlen(no[k])), "%s", no[k]);
    const char *cut = "/x/triton/runtime/autotuner.py";
    cr_assert_not(tg_tuner_library_file(cut, 10), "only the first len bytes are read");
}
