/* The Chrome trace-event timeline (trace=1): <log_path>.<pid>.trace.json,
 * opened by Perfetto and chrome://tracing.  Format and limits: docs/trace.md.
 *
 * Two kinds of producers:
 *  - CUDA hooks (any thread, GIL or not): tg_trace_cuda() pushes one event
 *    into the calling thread's single-producer ring.  No allocation, no lock,
 *    no syscall (one atomic fetch-add, once per thread, to claim a ring).
 *    The ring overwrites its oldest events when full; those count as dropped.
 *  - The Python side (GIL held): sessions, serialize waits, races.  They take
 *    the trace mutex, write to the file (one write(2) per flush), and drain
 *    every thread's ring at session end, at a race and at close.  The drainer
 *    is the only consumer of any ring (mutex), so ring access is SPSC.
 *
 * The file is created on the first event written, never before; it is a JSON
 * array written as '[' then one event per line followed by ',', closed with
 * a final "tunerguard trace end" event and ']' by tg_trace_close().  A file
 * cut short (crash, SIGKILL) is recovered by: drop everything after the last
 * newline, drop the trailing ',', append ']'. */
#ifndef TG_TRACE_H
#define TG_TRACE_H

#include <stdint.h>
#include <sys/types.h>

#include "core/thread_state.h"

struct tg_report;

#define TG_TRACE_RING 4096           /* CUDA events kept per thread between drains (power of 2) */
#define TG_TRACE_RINGS 64            /* threads that get a ring; later threads' CUDA events are dropped */
#define TG_TRACE_DEFAULT_CAP 1000000 /* trace_cap default: CUDA + session events written */

/* Set once by tg_trace_configure (constructor), read-only after: the one
 * predictable branch the CUDA hooks test before calling tg_trace_cuda. */
extern int tg_trace_on;

/* Constructor time.  on=0: everything below is a no-op.  cap: most CUDA and
 * session events written (races and waits are always written).  The file is
 * <stem>.<id>.trace.json of core/process.h (log_path "stderr" gives the
 * stem of "tunerguard"), created new on first use.  Not signal-safe;
 * allocates nothing. */
void tg_trace_configure(int on, long cap);

/* How to name a thread from its Python ident (tg_py_thread_name).  Called
 * with the GIL held, outside the trace mutex.  NULL (default): no names
 * except those carried by race reports. */
void tg_trace_set_namer(void (*namer)(unsigned long ident, char *buf, int len));

/* How to name CUDA calls (cuda/cuda_hooks.h: tg_cuda_fn_name, signal-safe;
 * tg_cuda_kernel_name, a driver call, asked only off the hot path).  Set at
 * start-up, before any CUDA event is traced; unset: "?" and "". */
void tg_trace_set_cuda_names(const char *(*fn_name)(unsigned fn),
                             const char *(*kernel_name)(unsigned long long func, char *buf, size_t n));

/* Hot path (CUDA hooks, after the real call returned; t is the caller's own
 * record, c its just-finished call, t0_ns and t1_ns its entry and exit in
 * CLOCK_MONOTONIC ns: the caller converts the record's clock).  Launches
 * are instants, synchronizations and module calls slices from t0_ns to
 * t1_ns.  No allocation, no lock, no syscall. */
void tg_trace_cuda(const struct tg_thread *t, const struct tg_cuda_call *c, uint64_t t0_ns, uint64_t t1_ns);

/* GIL held, on the thread itself.  A session is the outermost guarded call
 * of a thread on one instance; begin/end must pair (LIFO per thread).  Begin
 * is buffered, end drains the rings and flushes.  Sessions past the cap are
 * dropped (counted) together with their end. */
void tg_trace_session_begin(struct tg_thread *t, const char *method, const char *kernel,
                            uintptr_t instance);
void tg_trace_session_end(const struct tg_thread *t);

/* GIL held (the wait itself runs between them without it).  Always written. */
void tg_trace_wait_begin(struct tg_thread *t, pid_t holder_tid, uintptr_t instance);
void tg_trace_wait_end(const struct tg_thread *t);

/* GIL held, after the report was emitted: a race instant on the entering
 * thread and a flow arrow (s on the thread inside, f on the entering one).
 * Drains the rings and flushes.  Always written. */
void tg_trace_race(const struct tg_report *r);

/* cupti=1 (cuda/cupti_backend.c, off any hot path): one kernel execution on a
 * per-stream track of a "GPU <dev>" process, and, when its launch is known
 * (host_tid != 0), a launch slice on the host thread with a flow arrow from
 * it to the execution.  Counts against trace_cap like the CUDA events. */
void tg_trace_gpu_kernel(pid_t host_tid, uint64_t launch0, uint64_t launch1, int dev, uint32_t stream,
                         uint64_t start, uint64_t end, uint32_t corr, const char *name);

/* At exit (no GIL needed): drain the rings, write the end event (events
 * written and dropped) and ']', close.  Later calls are no-ops. */
void tg_trace_close(void);

/* Fatal-signal path: write what is buffered, best effort (skipped when a
 * thread is in the middle of filling the buffer).  Async-signal-safe. */
void tg_trace_signal_flush(void);

/* fork child: forget the parent's file, rings and names. */
void tg_trace_atfork_child(void);

struct tg_trace_stats {
    uint64_t events;          /* lines written, all kinds */
    uint64_t cuda_written, cuda_dropped;
    uint64_t sessions_written, sessions_dropped;
    uint64_t bytes;           /* bytes written to the file */
};
void tg_trace_get_stats(struct tg_trace_stats *out);
/* The trace file's path ("" before it was created). */
const char *tg_trace_path(void);

#endif
