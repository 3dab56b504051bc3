/* The trace's recorder: per-thread rings of CUDA events, filled by the CUDA
 * hooks (tg_trace_cuda, reports/trace.h) and drained by the trace writer
 * (reports/trace.c).  One producer per ring (its thread), one consumer at a
 * time (the caller of tg_trace_rec_drain holds the writer's mutex). */
#ifndef TG_TRACE_REC_H
#define TG_TRACE_REC_H

#include <stdint.h>
#include <sys/types.h>

/* One recorded CUDA call, as the consumer receives it. */
struct tg_trace_rec {
    pid_t tid;                  /* the thread that made it */
    uint64_t t0, t1;            /* CLOCK_MONOTONIC ns */
    uint64_t stream, func;
    uint64_t meta;              /* fn | kind << 16 | (uint32_t)device << 32 */
};

/* Hands every event published since the last drain to fn, ring by ring,
 * oldest first; returns how many were lost (overwritten before this drain,
 * torn by a producer that lapped it, or recorded by threads without a ring).
 * One consumer at a time; no allocation; fn may write. */
uint64_t tg_trace_rec_drain(void (*fn)(const struct tg_trace_rec *e, void *arg), void *arg);

/* Whether any ring holds events not drained yet.  One consumer at a time. */
int tg_trace_rec_pending(void);

/* In a fork child: every ring empty and unclaimed, the calling thread's too. */
void tg_trace_rec_atfork_child(void);

#endif
