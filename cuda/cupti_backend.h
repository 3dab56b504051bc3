/* The opt-in CUPTI backend (cupti=1; docs/cupti.md).
 *
 * libcupti is never linked: it is dlopen'ed on demand (cupti_path, else a
 * copy already loaded, else next to the loaded NVIDIA pip libraries, else
 * the CUDA installation), only in a process that has loaded libcuda, at the
 * first safe point after that: arming / an audit event of the Python side
 * (GIL held) or the first benchmark of a tuner session (CUDA hook slow path).
 * Anything that fails is one line on stderr and the process goes on exactly
 * as with cupti=0.
 *
 * What it collects: CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL records (name,
 * device, stream, start, end, correlation id), and, from a CUPTI callback on
 * the runtime and driver launch APIs, correlation id -> launching thread and
 * host launch time (detectors/gpu_overlap.h).  Activity buffers come from a
 * fixed pool (cupti_buffer_kb); records are processed when CUPTI hands a
 * buffer back (its own thread) or when flushed (benchmark end, exit), never
 * on a launching thread.
 *
 * With cupti=0 none of this is reached: nothing is loaded and no hot path
 * changes. */
#ifndef TG_CUPTI_BACKEND_H
#define TG_CUPTI_BACKEND_H

#include <stdint.h>
#include <sys/types.h>

#include "detectors/gpu_overlap.h"

/* cupti=1 and libcuda present (check_loaded: ask the loader; else only the
 * cheap "a libcuda pointer was seen" flag): start once.  Any thread; the
 * first caller does the work, others return at once.  Returns 1 while the
 * backend holds CUPTI. */
int tg_cupti_maybe_start(int check_loaded);

/* 1 while tunerguard holds CUPTI and collects (one relaxed load). */
int tg_cupti_active(void);

/* The calling thread's first launch inside its current tuner session (host
 * CLOCK_MONOTONIC ns, seen by the CUPTI launch callback), 0 if none. */
uint64_t tg_cupti_session_t0(void);

/* A benchmark window of the calling thread ended (verdict taken): forget
 * tg_cupti_session_t0. */
void tg_cupti_session_done(void);

/* Flush CUPTI's buffers (forced), process them, and judge the window
 * [t0, t1] of thread tid on device dev from GPU intervals.  Returns 0 with
 * *out filled, -1 when there is no GPU evidence (backend off or released,
 * no own kernel recorded in the window, or the store no longer holds the
 * window's start).  Not for hot paths (allocates, locks, calls CUPTI). */
int tg_cupti_verdict(pid_t tid, int dev, uint64_t t0, uint64_t t1, struct tg_gpu_verdict *out);

/* Exit (destructor, before the trace closes): flush and process, unsubscribe. */
void tg_cupti_shutdown(void);

/* fork child: CUPTI does not survive fork; the backend is off there. */
void tg_cupti_atfork_child(void);

#endif
