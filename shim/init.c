/* The constructor and process-level hooks.
 *
 * The constructor only reads TUNERGUARD_OPTIONS and registers hooks: no
 * threads, no files, no CUDA, no Python calls beyond PySys_AddAuditHook.
 * Bad options stop the process with status 2 before the program runs,
 * help=1 prints the table and stops with status 0. */
#include "detectors/tuner_table.h"
#include "reports/emit.h"
#include "reports/fatal.h"
#include "reports/py_stack.h"
#include "reports/report.h"
#include "reports/trace.h"
#include "core/clock.h"
#include "shim/cuda_hooks.h"
#include "shim/cupti_backend.h"
#include "core/log.h"
#include "core/options.h"
#include "core/process.h"
#include "core/py_api.h"
#include "shim/lifecycle.h"
#include "shim/py_arm.h"
#include "shim/py_guard.h"
#include "reports/suppress_load.h"
#include "core/thread_state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* halt_on_race and deadlock=abort (reports/emit.h): stop the process now,
 * after the report, with what a normal exit would leave. */
static void halt_now(void)
{
    tg_shutdown(TG_SHUTDOWN_HALT);
}

__attribute__((constructor)) static void tg_init(void)
{
    char err[768];
    if (tg_options_parse(getenv("TUNERGUARD_OPTIONS"), &tg_opts, err, sizeof err) < 0) {
        tg__warn("%s", err);
        _exit(2);
    }
    if (tg_opts.help) {
        tg_options_print_help(1);
        _exit(0);
    }
    if (tg_opts.mode == TG_MODE_OFF)
        return;
    /* A setuid or setgid program: the paths from the environment are not
     * ours to follow (glibc ignores LD_PRELOAD paths there too). */
    char ignored[96];
    if (tg_proc_secure_filter(&tg_opts, tg_proc_secure(), ignored, sizeof ignored) > 0)
        tg__warn("secure execution (a setuid or setgid program): %s in TUNERGUARD_OPTIONS ignored; reports go "
                 "to stderr", ignored);
    if (tg_opts.mode == TG_MODE_OFF)
        return;
    /* Suppressions matter only where reports are written: Python processes.
     * Not reading the file elsewhere keeps the compilers and shells a job
     * starts (often in another directory, where a relative path would not
     * resolve) untouched. */
    if (tg_opts.suppressions[0] && tg_py_present() &&
        tg_supp_load(tg_opts.suppressions, err, sizeof err) < 0) {
        tg__warn("%s", err);
        _exit(2);
    }
    tg_clock_init();
    tg_proc_configure(tg_opts.log_path); /* copies; the facts are computed at arming */
    tg_report_set_symbolize(tg_opts.symbolize);
    tg_trace_configure(tg_opts.trace, tg_opts.trace_cap);
    tg_trace_set_namer(tg_py_thread_name);
    tg_trace_set_cuda_names(tg_cuda_fn_name, tg_cuda_kernel_name);
    tg_emit_set_halt(halt_now);
    tg_lifecycle_arm_fork();
    tg_arm_init(); /* the fatal-signal handler is installed with the first guard */
}

/* Runs at exit() after the interpreter finalised (or in a process that never
 * armed).  Applies exitcode= when any report was written, reports of races
 * that a serialize wait prevented aside (unless prevented_is_race=1). */
__attribute__((destructor)) static void tg_fini(void)
{
    if (tg_opts.mode == TG_MODE_OFF)
        return;
    tg_shutdown(TG_SHUTDOWN_EXIT);
}
