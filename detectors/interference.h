/* Tuning-interference detector: while a thread benchmarks a
 * kernel on device D, count the kernels OTHER threads launch on D.  Their
 * work shares the GPU with the benchmark, so the timings (and the config that
 * wins, cached to disk) are wrong.
 *
 * Pure logic: no dlsym, no I/O, no lock, no allocation.  The hot path (every
 * intercepted launch) only reads tg_itf_bench[dev & mask]: one relaxed load
 * and one branch, taken only while some thread benchmarks on that device.
 *
 * A thread "benchmarks on D" from the moment, inside a tuner session, it has
 * synchronized or launched more than once (the CUDA hooks call
 * tg_itf_begin(D) then), until its outermost session ends (tg_itf_end).
 * While tg_itf_bench[D] > 0, every launch on D goes through tg_itf_launch:
 * one atomic add on the device's launch counter, and a (tid, function) sample
 * in a small fixed table (CAS to claim a slot, relaxed stores).  A
 * benchmarking thread's foreign launches = the counter's growth during its
 * window minus its own launches on D; two threads benchmarking on one device
 * both see each other's launches.  Different devices never interfere. */
#ifndef TG_INTERFERENCE_H
#define TG_INTERFERENCE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define TG_ITF_MAXDEV 64          /* power of two: devices alias by dev & (MAXDEV-1) */
#define TG_ITF_SAMPLES 32         /* per device, (tid, function) pairs */
#define TG_ITF_MAX_FOREIGN 8      /* samples a session end hands back */

/* Threads benchmarking on device d & (TG_ITF_MAXDEV-1).  Read on every launch. */
extern _Atomic uint32_t tg_itf_bench[TG_ITF_MAXDEV];

/* The calling thread's benchmark window (TLS; zero = none). */
struct tg_itf_thread {
    int dev1;          /* device + 1 it is registered on; 0: not benchmarking */
    uint64_t start;    /* the device's launch counter at registration */
    uint64_t own;      /* own launches on dev since registration */
    uint64_t func;     /* its last own launch's function (the kernel under benchmark) */
};
extern __thread struct tg_itf_thread tg_itf_self;

/* Hot path: might device dev be under benchmark?  dev may be -1 or large
 * (aliases; tg_itf_launch rechecks). */
static inline int tg_itf_maybe_busy(int dev)
{
    return atomic_load_explicit(&tg_itf_bench[(unsigned)dev & (TG_ITF_MAXDEV - 1)],
                                memory_order_relaxed) != 0;
}

/* The calling thread (tid) starts benchmarking on dev (no-op if it already
 * does, or dev is out of range). */
void tg_itf_begin(int dev);

/* A launch of func by thread tid on dev, seen while tg_itf_maybe_busy(dev).
 * Returns 1 if it is foreign to some benchmark (the device is busy and the
 * caller is not itself benchmarking on it), else 0. */
int tg_itf_launch(int dev, pid_t tid, uint64_t func);

struct tg_itf_result {
    int dev;                   /* device benchmarked on */
    uint64_t func;             /* the kernel under benchmark (own last launch) */
    uint64_t own;              /* own launches during the window */
    uint64_t foreign;          /* launches by other threads on dev during the window */
    int nsamples;              /* entries in samples[] */
    struct { pid_t tid; uint64_t func; } samples[TG_ITF_MAX_FOREIGN];
    int last_out;              /* 1: the device has no benchmark left (wake isolate waiters) */
};

/* The calling thread (tid) stops benchmarking.  Returns 0 when it was not
 * benchmarking (out untouched), else 1 with out filled. */
int tg_itf_end(pid_t tid, struct tg_itf_result *out);

/* Fork child: nothing benchmarks. */
void tg_itf_atfork_child(void);

#endif
