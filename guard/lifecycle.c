/* See guard/lifecycle.h. */
#include "guard/lifecycle.h"
#include "core/clock.h"
#include "core/options.h"
#include "core/process.h"
#include "core/thread_state.h"
#include "detectors/tuner_table.h"
#include "reports/py_program.h"
#include "reports/emit.h"
#include "reports/py_stack.h"
#include "reports/report.h"
#include "reports/suppress_load.h"
#include "reports/trace.h"
#include "cuda/cuda_hooks.h"
#include "cuda/cuda_record.h"
#include "cuda/cuda_stress.h"
#include "cuda/cupti_backend.h"
#include "loader/py_arm.h"
#include "guard/guard_thread.h"
#include "guard/py_guard.h"
#include "guard/install_internal.h"
#include "guard/serialize_wait.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The guard's part of the fork child: what the parent saw is the parent's
 * to report (the count of guards stays: they are still installed). */
void tg_guard_atfork_child(void)
{
    int guards_kept = tg__gstats.guards;
    memset(&tg__gstats, 0, sizeof tg__gstats); /* the only thread left */
    tg__gstats.guards = guards_kept;
    tg__install_atfork_child();
    tg__lazy_atfork_child();
    tg__serialize_atfork_child();
    tg__race_again_atfork_child();
    tg__slotless_atfork_child();
}

/* fork child: the one list.  The calling thread is the only one left; what
 * the parent saw is the parent's to report.  In the order the handlers were
 * registered before there was one list. */
static void fork_child(void)
{
    tg__thread_atfork_child();
    tg__gthread_atfork_child(); /* the guard's part of the thread's record */
    tg_tuner_atfork_child();
    tg_sink_atfork_child();
    tg_guard_atfork_child();
    tg_emit_atfork_child();
    tg_py_program_atfork_child();
    tg_arm_atfork_child();
    tg_trace_atfork_child();
    tg_cupti_atfork_child();
    tg__cuda_record_atfork_child(); /* per-variant call counts */
    tg__stress_atfork_child();      /* interference windows, isolate_tuning and stress state */
}

/* pthread_atfork is not libc's own export but a stub from libc_nonshared.a
 * linked into us, and it lands after all of our .text (a page of its own,
 * when a window was all it took before the split, core/startup.h).  On
 * glibc the stub is one call of __register_atfork with this object's
 * __dso_handle (LSB Core names the interface); make that call here. */
#ifdef __GLIBC__
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);
extern void *__dso_handle;
static void register_fork_child(void)
{
    __register_atfork(NULL, NULL, fork_child, __dso_handle);
}
#else
static void register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}
#endif

void tg_lifecycle_arm_fork(void)
{
    static _Atomic int armed;
    if (!atomic_load_explicit(&armed, memory_order_relaxed) && !atomic_exchange(&armed, 1)) {
        tg_clock_init(); /* ticks are recorded from here on (core/clock.h) */
        register_fork_child();
    }
}

/* halt_on_race and deadlock=abort (reports/emit.h): stop the process now,
 * after the report, with what a normal exit would leave. */
static void halt_now(void)
{
    tg_shutdown(TG_SHUTDOWN_HALT);
}

/* 0 not yet, 1 being set up, 2 done (a second caller waits: the set-up is
 * a few stores). */
static _Atomic int activated;

static void activate(void)
{
    tg_proc_setup(); /* the report path, once (arming may have done it) */
    tg_report_set_symbolize(tg_opts.symbolize);
    tg_trace_configure(tg_opts.trace, tg_opts.trace_cap);
    tg_trace_set_namer(tg_py_thread_name);
    tg_trace_set_cuda_names(tg_cuda_fn_name, tg_cuda_kernel_name);
    tg_emit_set_halt(halt_now);
}

void tg__core_activate(void)
{
    if (atomic_load_explicit(&activated, memory_order_acquire) == 2)
        return;
    int expect = 0;
    if (atomic_compare_exchange_strong(&activated, &expect, 1)) {
        activate();
        atomic_store_explicit(&activated, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&activated, memory_order_acquire) != 2)
        sched_yield(); /* another thread is setting up (stores only) */
}

/* The destructor's work (loader/init.c, through the core's table): a process
 * that was never activated has reported, traced and serialized nothing. */
void tg__core_fini(void)
{
    if (tg_opts.mode == TG_MODE_OFF || atomic_load_explicit(&activated, memory_order_relaxed) == 0)
        return;
    tg_shutdown(TG_SHUTDOWN_EXIT);
}

void tg_shutdown(enum tg_shutdown_why why)
{
    tg_trace_close();
    tg_arm_exit_summary();
    if (why == TG_SHUTDOWN_HALT)
        _exit(tg_opts.exitcode >= 0 ? tg_opts.exitcode : 66);
    tg_supp_exit_report(tg_opts.verbosity);
    struct tg_emit_stats s;
    tg_emit_stats(&s);
    if (tg_opts.exitcode >= 0 && s.failing > 0) { /* tg_report_fails */
        fflush(NULL);
        _exit(tg_opts.exitcode);
    }
}
