/* The constructor and process-level hooks.
 *
 * The constructor only reads TUNERGUARD_OPTIONS and registers the audit
 * hook: no threads, no files, no CUDA, no Python calls beyond
 * PySys_AddAuditHook.
 * Bad options stop the process with status 2 before the program runs,
 * help=1 prints the table and stops with status 0. */
#include "core/log.h"
#include "core/options.h"
#include "core/process.h"
#include "core/py_api.h"
#include "core/startup.h"
#include "loader/core_api.h"
#include "loader/py_arm.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* In every process the preload enters, most of which never import a target
 * nor call CUDA (a shell, a compiler, `python -c pass`), the constructor does
 * the least that decides whether anything can happen: the options, the
 * secure-execution filter and, in a Python process, the audit hook.  All of
 * it is the loader's code (loader/core_api.h); the core library is loaded
 * here only when suppressions are to be read.  What
 * reports and the trace need is set up by tg_activate (loader/core_api.h) at
 * arming or the first CUDA resolution, the fork-child list and the clock at
 * the first guard or CUDA resolution (tg_lifecycle_arm_fork): elsewhere their
 * pages and libc functions are not paid for (docs/benchmarks.md, "Start-up
 * cost"). */
static const struct {
    char options[sizeof "TUNERGUARD_OPTIONS"];
    char preload[sizeof "LD_PRELOAD"];
} env_names TG_STARTUP_RODATA = {"TUNERGUARD_OPTIONS", "LD_PRELOAD"};
static const char stderr_name[] TG_STARTUP_RODATA = "stderr";
static const char default_log_path[] TG_STARTUP_RODATA = "tunerguard";

/* Another copy of libtunerguard.so serves this process (loader/core_api.h,
 * tg__copy_inert): this one stays inert.  One line at verbosity>=1 only:
 * this copy is in every process of the job (shells, compilers), where a
 * line at the default verbosity would be noise in each; `tunerguard doctor`
 * names the copy that serves.  Options this copy cannot parse are the
 * serving copy's to judge: nothing said here. */
static void say_inert(void *serving)
{
    struct tg_options o;
    char err[8];
    if (tg_options_parse(getenv(env_names.options), &o, err, sizeof err) < 0)
        return;
    int say = o.verbosity >= 1;
    tg_options_free(&o);
    Dl_info them, me;
    if (say && dladdr(serving, &them) && dladdr((void *)say_inert, &me))
        tg__warn("%s serves this process (first in LD_PRELOAD's order); this other copy, %s, stays inert",
                 them.dli_fname, me.dli_fname);
}

/* Does LD_PRELOAD (entries split by spaces or colons, as ld.so reads it)
 * name anything by a relative path? */
TG_STARTUP static int preload_has_relative(const char *s)
{
    for (int start = 1; s && *s; s++) {
        if (*s == ' ' || *s == ':')
            start = 1;
        else if (start && *s != '/')
            return 1;
        else
            start = 0;
    }
    return 0;
}

/* glibc calls constructors with main's arguments (argv: Python's options,
 * read by tg_arm_init); other C libraries pass nothing, so none is read. */
__attribute__((constructor)) static void tg_init(int argc, char **argv, char **envp)
{
    (void)envp;
#ifndef __GLIBC__
    argc = 0;
    argv = NULL;
#endif
    tg_log_note_start(); /* before any line: the stderr this process started with */
    void *serving;
    if (tg__copy_inert(&serving)) {
        say_inert(serving);
        return;
    }
    char err[768];
    if (tg_options_parse(getenv(env_names.options), &tg_opts, err, sizeof err) < 0) {
        tg__warn("%s", err);
        _exit(2);
    }
    /* stderr closed at start: fd 2 will be the program's file; reports
     * asked for on stderr go to the default files instead. */
    if (!tg_log_stderr_ok() && strcmp(tg_opts.log_path, stderr_name) == 0 &&
        tg_options_set_string(&tg_opts, &tg_opts.log_path, default_log_path) == 0)
        tg_log_note_moved();
    if (tg_opts.help) {
        tg_options_print_help(1);
        _exit(0);
    }
    /* The core is found beside the loader when it is first needed, maybe
     * after the program changed directory (mode=off too: the cupti* rows
     * load it): a relative preload path is made absolute now (only then: no
     * syscall where the path is absolute). */
    if (preload_has_relative(getenv(env_names.preload)))
        tg__core_note_dir();
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
     * resolve) untouched.  A process that has them is set up now: the exit
     * lists the matched ones (verbosity>=1) even where nothing armed. */
    if (tg_opts.suppressions[0] && tg_py_present()) {
        const struct tg_core_api *core = tg_core_load(); /* no core: said, nothing to suppress */
        if (core && core->supp_load(tg_opts.suppressions, err, sizeof err) < 0) {
            tg__warn("%s", err);
            _exit(2);
        }
        tg_activate();
    }
    tg_arm_init(argc, argv); /* the fatal-signal handler is installed with the first guard */
}

/* Runs at exit() after the interpreter finalised (or in a process that never
 * armed).  Applies exitcode= when a report that fails the run was written
 * (tg_report_fails: informational kinds and races a serialize wait prevented
 * aside, unless prevented_is_race=1).  A
 * process that was never activated (no arming, no CUDA call) has reported,
 * traced and serialized nothing: nothing to say, no page to touch. */
__attribute__((destructor)) static void tg_fini(void)
{
    const struct tg_core_api *core = tg_core_loaded();
    if (tg_opts.mode == TG_MODE_OFF || !core) /* no core: nothing was activated */
        return;
    core->fini();
}
