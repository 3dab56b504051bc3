/* Between the trace file's writer (reports/trace.c) and the events written
 * through it (reports/trace_events.c).  Every call named _unlocked, and
 * every use of the state below, is under the trace mutex
 * (tg__trace_lock .. tg__trace_unlock). */
#ifndef TG_TRACE_INTERNAL_H
#define TG_TRACE_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include "reports/trace.h"
#include "reports/writer.h"

#define TG__GPU_PID 1000000000 /* "GPU <dev>" processes: pid 1e9 + dev (above any Linux pid) */

struct tg__trace_state {
    pid_t pid;                    /* process that owns the open file; 0: none */
    int fd;
    int failed;                   /* could not create/write: stop quietly */
    int closed;
    uint64_t t0_ns;               /* ts origin */
    uint64_t flow_id;
    struct tg_trace_stats st;
};
extern struct tg__trace_state tg__trace;
extern struct tg_w tg__trace_w;   /* the file's buffer */
extern long tg__trace_cap;        /* trace_cap: CUDA and session events written at most */
/* The thread namer (tg_trace_set_namer), written at activation. */
extern void (*tg__trace_namer)(unsigned long, char *, int);

/* Take the mutex and mark the buffer busy for the signal path; give both
 * back. */
void tg__trace_lock(void);
void tg__trace_unlock(void);

/* Open the file on first use in this process (or check it is still ours).
 * 0 when events may be written. */
int tg__trace_open_unlocked(void);
/* Write the buffer out; a failed write turns trace=1 off with one line. */
void tg__trace_flush_unlocked(void);
/* Events counted against trace_cap so far. */
uint64_t tg__trace_capped_unlocked(void);
/* Every thread's recorded CUDA events into the file; may_ask_driver: a
 * kernel's name not cached yet may be asked of the driver (not at exit). */
void tg__trace_drain_all_unlocked(int may_ask_driver);

/* One event: {"ph":"<ph>","pid":P,"tid":T,"ts":S (no ts for 'M'), then
 * the caller's keys, then tg__trace_ev_end.  pid: this process's, or
 * TG__GPU_PID + dev for a GPU track. */
void tg__trace_ev_start(char ph, pid_t tid, uint64_t ts_ns);
void tg__trace_ev_start_pid(char ph, pid_t pid, pid_t tid, uint64_t ts_ns);
void tg__trace_ev_end(void);
/* ,"k":value -- strings JSON-escaped and cut at max bytes; hex as a string */
void tg__trace_kv_str(const char *k, const char *v, size_t max);
void tg__trace_kv_u64(const char *k, uint64_t v);
void tg__trace_kv_i64(const char *k, int64_t v);
void tg__trace_kv_hex(const char *k, uint64_t v);
/* ,"args":{ ... } around kv_* calls */
void tg__trace_args_open(void);
void tg__trace_args_close(void);

/* Name a thread's track (once per tid; empty names are not written), a GPU
 * device's and stream's tracks (once each). */
void tg__trace_name_thread_unlocked(pid_t tid, const char *name);
void tg__trace_gpu_track_unlocked(int dev, uint32_t stream);

#endif
