/* Per-thread state of tunerguard: one record per OS thread, in TLS.
 *
 * The record holds what more than one layer reads of a thread: its identity
 * (tid, ident, is_main), the CUDA hooks' fields (the hook line, `last`:
 * cuda/), the tuner sessions it is inside and its place in a tuner's FIFO
 * of waiters (held, park, wait_next, waiting_for: detectors/tuner_table.h),
 * and the evidence line another thread's entry reads.  What only the guard
 * reads and writes is the guard's (guard/guard_thread.h), in an opaque area
 * at the tail.  Each field's comment says who writes and reads it.
 *
 * Contract: tg__self() never allocates, never locks, never makes a syscall
 * after the first call on a thread (the first call caches gettid()).  It is
 * async-signal-safe once initialised.  The record lives as long as the thread;
 * other threads may read it (through the tuner table's holder pointer) while
 * the owner is inside a tuner session, `last` with its seqlock (below). */
#ifndef TG_THREAD_STATE_H
#define TG_THREAD_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TG_MAX_NATIVE_FRAMES 48
#define TG_MAX_HELD 16

/* A field of a thread's record that its owner writes and other threads
 * read without a lock (`tuning`, `session_*`: evidence, a hint): the
 * owner's store a relaxed atomic (a plain mov on x86-64 and Arm), the
 * readers' loads relaxed atomics too.  The owner reads its own plainly. */
#define TG_OWN_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

/* The last CUDA driver call a thread made that can release the GIL: written
 * by the CUDA hooks of the owning thread (no GIL held), read by another thread
 * when it writes a race report (GIL held).  A seqlock: the writer
 * (tg__cuda_seq_begin / _end, cuda/cuda_record.h) never waits; a reader
 * copies the record and retries while seq is odd or changed. */
struct tg_cuda_call {
    uint32_t seq;          /* odd while the writer is mid-update */
    uint16_t fn;           /* index into the CUDA hook table (core/cuda_api.inc) */
    uint8_t kind;          /* enum tg_cuda_kind */
    uint8_t inside;        /* 1 while the real driver call runs (GIL released) */
    int32_t device;        /* -1 when unknown */
    /* Not part of the call: a reader's request to hold the thread where it
     * is (core/thread_hold.h), in the owner's record only.  Here because its
     * hooks write this line anyway: the one load they add costs no other
     * line.  Changed with atomics only; a reader's copy ignores it. */
    uint32_t hold;
    uint64_t stream;       /* raw CUstream handle */
    uint64_t func;         /* CUfunction / CUkernel / CUgraphExec, 0 if none */
    /* tg_ticks() (core/clock.h) in the owner's record: the hook's clock,
     * one instruction on x86-64.  A reader's copy (cuda/cuda_record.c, tg_cuda_call_read)
     * holds CLOCK_MONOTONIC ns, converted with tg_ticks_to_ns. */
    uint64_t t_enter;
    uint64_t t_exit;       /* 0 while inside */
    int32_t nframes;       /* native stack captured at this call, 0 if none */
    void *frames[TG_MAX_NATIVE_FRAMES];
};

enum tg_cuda_kind {
    TG_CUDA_NONE = 0,
    TG_CUDA_LAUNCH,
    TG_CUDA_SYNC,
    TG_CUDA_MODULE,
    TG_CUDA_OTHER,
};

/* The guard's part of the record (guard/guard_thread.h, struct
 * tg_guard_thread: the guarded call's, detect's unregistered session's,
 * serialize's waits' and turn's fields), opaque here: an area of this many
 * bytes at the record's tail, 64-byte aligned, reached with tg__gthread(t).
 * In the record, so that another thread reaches it from the record a tuner
 * table entry points at (the holder's) as it reaches the rest. */
#define TG_GUARD_THREAD_SIZE 192

struct tg_thread {
    /* The hook line: what a recorded CUDA launch reads and writes of the
     * thread's own, on the record's first line (the record is 64-byte
     * aligned: see `tuning`).  A launch runs after the program's own work
     * has evicted tunerguard's data from the CPU's near caches, and with the
     * GIL released, where whatever it costs delays the launching thread's
     * return to the GIL (docs/benchmarks.md): of its
     * own, it touches this line, `last`'s first and its counter row. */
    pid_t tid;                /* gettid(), 0 until first use */
    int busy;                 /* >0 while tunerguard itself runs on this thread:
                                 hooks seen then pass straight through */
    /* Tuner sessions this thread is inside, outermost first (held[], the
     * tuner table entries, opaque here).  depth counts nested guarded calls
     * in total. */
    int nheld;
    /* Launches in the current outermost session; reset when a session
     * starts.  Incremented by the CUDA hooks. */
    uint32_t session_launches;
    int depth;
    /* This thread's row of the CUDA call counters, plus one; 0 until its
     * first recorded call claims one (cuda/cuda_record.h). */
    int cuda_row;
    /* The device of the last stream or context the thread launched on
     * (dev1_key as tg__devcache keys it), valid while tg__cuda_gen ==
     * dev1_gen: a one-entry cache in front of tg__devcache. */
    int32_t dev1_dev;
    uint32_t dev1_gen;
    uint64_t dev1_key;
    /* The tuner instance of detect's unregistered session this thread is
     * in (guard/lazy_session.c), 0 when none: here because every launch in
     * the steady state reads it (an unregistered session's hooks publish its
     * evidence); the rest of that session is the guard's (lazy_g, ...).
     * Written by the owner, and by a thread that registers the session for
     * it, both with the GIL; read by the owner's hooks without it: atomic. */
    uintptr_t lazy_inst;
    /* The rest of the first line and the next three: what a guarded call
     * reads and writes of its own thread's here (guard/session.c), besides
     * the fields above, the evidence line and the guard's first line
     * (guard/guard_thread.h). */
    /* Guarded calls this thread is in (guard/session.c, tg__guard_entry), and
     * the program's own exception (type, value, traceback: PyObject *) that
     * Python code tunerguard ran inside one of them raised, kept to be raised
     * when that call returns (core/py_attr.h, tg_py_drop_error: here because
     * that reads them).  GIL held. */
    int guard_frames;
    void *held[TG_MAX_HELD] __attribute__((aligned(64)));
    uint8_t held_slot[TG_MAX_HELD]; /* t's occupant slot in held[i], 0xff none (overflow) */
    void *kept_exc[3];
    unsigned long ident;      /* pthread_self(): Python's threading.get_ident() */
    /* The current device when the thread last entered a tuner before it made
     * any CUDA call of its own (the race of a cold cache happens while both
     * threads compile), -1 unknown (set at first use).  Written by the
     * thread at entry, read by another thread's report; both with the GIL
     * held. */
    int32_t entry_device;
    /* The process's main thread (its tid is the pid), where Python runs
     * signal handlers: taken at first use, set in a fork child (the forking
     * thread is the child's main thread).  serialize's waits read it. */
    int is_main;
    /* serialize mode: the tuner table entry this thread waits for, NULL when
     * not waiting.  Written and read with the GIL held (wait-graph search).
     * On a line of its own with the next two, away from the lines a guarded
     * call touches: a waker writes `park`. */
    void *waiting_for __attribute__((aligned(64)));
    /* serialize mode's lock (detectors/tuner_table.h, "The lock"): the word
     * this thread parks on while it waits (futex; bumped by the thread that
     * wakes it or hands it the tuner, without the GIL), and its link in the
     * tuner's FIFO of waiters (GIL held). */
    uint32_t park;
    struct tg_thread *wait_next;
    /* Odd while the thread is in one of tunerguard's own waits with its
     * thread state detached (the report lock, serialize's waits): a parking
     * point (core/thread_hold.h).  Owner writes, readers load. */
    uint32_t wait_seq;
    /* Benchmarking evidence for the current outermost session, the fields
     * another thread's entry reads when it overlaps this thread's session
     * (guard/race_decide.c, tg__other_is_tuning, through tg_thread_tuning:
     * for a marked tuner only when this thread's evidence bit in the tuner
     * is set, for targets= tuners on every overlap).  On a line of their own,
     * each written only when its value changes: in the steady state (tuned
     * calls, nobody tuning) the line stays unwritten, so the reader finds it
     * in its own cache instead of on the owner's CPU.
     *
     * tuning: inside a tuning method (Autotuner._bench, prune_configs,
     * check_disk_cache, CachingAutotuner.benchmark_all_configs, ...): a
     * marker guard counts it, so "is that thread tuning?" is one load, not a
     * walk of its Python frames.  Written by the owner, GIL held. */
    int tuning __attribute__((aligned(64)));
    /* The current outermost session entered a tuning method (a cold key:
     * pruned, benchmarked or looked up on disk), even if it has left it:
     * Triton main's single-config shortcut prunes to one config and runs it
     * without a benchmark.  Reset when a session starts. */
    int session_tuned;
    /* Synchronizations in the current session (CUDA hooks); reset when a
     * session starts. */
    uint32_t session_syncs;
    /* session_launches has reached 2 in the current session (the CUDA hooks
     * set it once; reset when a session starts). */
    uint32_t session_multi;
    /* The tuning method `tuning` counts from 0 (its marker guard), for a
     * report on a declared tuner's tuning step (tuning=); written with
     * `tuning`, read with it by another thread's report: on this line. */
    const void *tuning_step;
    char evidence_end_[40]; /* the rest of the line: nothing written per call */
    struct tg_cuda_call last;  /* last GIL-releasing CUDA call */
#ifdef TG_INSITU
    /* The in-situ profile build only (core/insitu.h): this thread's counts. */
    uint64_t insitu[8];
    int insitu_reg;
#endif
    /* The guard's part (above, and guard/guard_thread.h).  Zero until the
     * guard writes it. */
    unsigned char guard_area[TG_GUARD_THREAD_SIZE] __attribute__((aligned(64)));
};

/* The hook line (above): its fields on the record's first line. */
_Static_assert(offsetof(struct tg_thread, lazy_inst) + sizeof(uintptr_t) <= 64 &&
                   offsetof(struct tg_thread, guard_frames) < 64,
               "the hook line holds the hook's fields, and the guarded call's count");
/* The evidence line: its four fields on one line, with nothing else. */
_Static_assert(offsetof(struct tg_thread, tuning) % 64 == 0, "the evidence starts a line");
_Static_assert(offsetof(struct tg_thread, session_multi) / 64 == offsetof(struct tg_thread, tuning) / 64,
               "the evidence fits its line");
_Static_assert(offsetof(struct tg_thread, last) - offsetof(struct tg_thread, tuning) >= 64,
               "nothing written per call shares the evidence line");
_Static_assert(offsetof(struct tg_thread, wait_next) < offsetof(struct tg_thread, tuning),
               "the record's own fields come before the evidence line");
_Static_assert(offsetof(struct tg_thread, last) % 64 == 0, "the record of the last call starts a line");
_Static_assert(offsetof(struct tg_cuda_call, hold) < offsetof(struct tg_cuda_call, t_exit),
               "the hold request is on the line every hooked call writes");
_Static_assert(offsetof(struct tg_thread, guard_area) % 64 == 0, "the guard area starts a line");

struct tg_thread *tg__self(void);
/* The record itself (core/thread_state.c; the loader's initial-exec TLS):
 * for tg__self_fast only. */
extern __thread struct tg_thread tg__tls_rec;
/* tg__self() without the call, for the CUDA hooks: the TLS address, and the
 * first-use set-up through tg__self() when the thread has none yet. */
static inline __attribute__((always_inline)) struct tg_thread *tg__self_fast(void)
{
    struct tg_thread *t = &tg__tls_rec;
    return __builtin_expect(t->tid != 0, 1) ? t : tg__self();
}
/* The calling thread's record as it is, without tg__self's first-use set-up
 * (no gettid, no tid cached): for code that only counts itself in and out
 * (`busy`) before anything is guarded (the audit hook, arming, the finder),
 * so that a process that never guards nor calls CUDA caches nothing a fork
 * child would have to forget (the fork-child list is registered only then:
 * guard/lifecycle.h).  A later tg__self() on the thread sets it up as usual. */
struct tg_thread *tg__self_busy(void);
/* In a fork child: reset the calling thread's record (new tid, nothing held). */
void tg__thread_atfork_child(void);

/* Is thread tid of this process still there?  One tgkill(2) with signal 0
 * (sends nothing); errno is kept.  Any thread, no lock, no allocation. */
int tg_tid_alive(pid_t tid);

#endif
