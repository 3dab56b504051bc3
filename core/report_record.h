/* The record of one report: what capture fills (guard/, GIL held, or the
 * fatal-signal path) and what every consumer reads: the writers
 * (reports/report.h), the suppressions (detectors/suppress.h), the trace.
 * Plain data, every string a fixed-size buffer inside the struct, so a
 * report can be copied, written and matched without allocating. */
#ifndef TG_REPORT_RECORD_H
#define TG_REPORT_RECORD_H

#include <stdint.h>
#include <sys/types.h>
#include "core/thread_state.h"

/* Python frames kept per thread: the innermost TG_PY_HEAD_FRAMES and, of a
 * deeper stack, the outermost TG_MAX_PY_FRAMES - TG_PY_HEAD_FRAMES (the
 * program's own frames and the thread's start), py_omitted counting those
 * between. */
#define TG_MAX_PY_FRAMES 256
#define TG_PY_HEAD_FRAMES 192
#define TG_REPORT_SCHEMA_VERSION 2
#define TG_SYM_LEN 160         /* one symbolized native frame, NUL included */
#define TG_SRC_LEN 112         /* source file of one native frame, NUL included */
#define TG_MANGLED_LEN 128     /* the mangled C++ name of one native frame, NUL included */
#define TG_KERNEL_NAME_LEN 256 /* a CUDA kernel's name, NUL included: C++ templates' mangled
                                * names run past 100 bytes, and a cut one cannot be demangled */

struct tg_py_frame {
    char file[200];
    char func[96];
    int line;
};

/* One thread as a report shows it. */
struct tg_thread_view {
    pid_t tid;                 /* OS thread id */
    unsigned long ident;       /* threading.get_ident() */
    char name[64];             /* Python thread name, "" if unknown */
    int npy;                   /* Python frames, most recent call first */
    int py_truncated;          /* more frames existed than fit */
    int py_omitted;            /* how many: they were between py[TG_PY_HEAD_FRAMES - 1]
                                  and py[TG_PY_HEAD_FRAMES] (0 if none) */
    int py_unreadable;         /* another thread's stack, not read: the interpreter was
                                  finalizing and had released that thread's state (npy 0) */
    int py_at_entry;           /* another thread's stack on a free-threaded build, not read:
                                  it ran on (Python code, or blocked outside tunerguard),
                                  parked in no CUDA call and no wait of tunerguard's within
                                  the bound (core/thread_hold.h); py[0] is where it entered
                                  the tuner (the guarded method's caller), npy 0 or 1 */
    struct tg_py_frame py[TG_MAX_PY_FRAMES];
    int nnative;               /* raw return addresses, innermost first */
    void *native[TG_MAX_NATIVE_FRAMES];
    char native_where[96];     /* where the native stack was taken, e.g.
                                  "at entry" or "in cuCtxSynchronize_v2" */
    int has_cuda;              /* cuda is valid */
    struct tg_cuda_call cuda;  /* last GIL-releasing CUDA call */
    char cuda_fn[48];          /* its driver function name */
    char cuda_kernel[TG_KERNEL_NAME_LEN]; /* kernel name, "" if none or unknown; a C++ name
                                  demangled by tg_report_symbolize() */
    char cuda_kernel_mangled[TG_KERNEL_NAME_LEN]; /* ... and then as the binary has it; "" if not demangled */
    int has_entry_device;      /* !has_cuda, and entry_device is known */
    int entry_device;          /* the thread made no CUDA call yet: its current
                                  device when it entered the tuner */
    uint64_t entered_ns;       /* when it entered the tuner (CLOCK_MONOTONIC) */
    int benchmarking;          /* it launched or synchronized inside the session */
    uint32_t launches;         /* launches inside the session (0 if unknown) */
    uint32_t syncs;            /* synchronizations inside the session */
    /* Filled by tg_report_symbolize() at report time (never by capture, never
     * in a signal handler): native_sym[i] names the i-th frame the writers
     * print (native[], or cuda.frames[] when nnative is 0).  nsym == 0: not
     * symbolized, the writers print raw addresses. */
    int nsym;
    char native_sym[TG_MAX_NATIVE_FRAMES][TG_SYM_LEN];
    /* Source of native_sym[i] from DWARF line tables (reports/dwarf_lines.h),
     * also filled by tg_report_symbolize(): "" and 0 when unknown (no libdw,
     * no debug info).  A path too long keeps its end, prefixed "...". */
    char native_file[TG_MAX_NATIVE_FRAMES][TG_SRC_LEN];
    int native_line[TG_MAX_NATIVE_FRAMES];
    /* A C++ function name of native_sym[i], demangled there by
     * tg_report_symbolize(): the name as the binary has it ("_ZN..."); ""
     * when native_sym[i] was not demangled. */
    char native_mangled[TG_MAX_NATIVE_FRAMES][TG_MANGLED_LEN];
};

/* The kinds, one row each in core/report_kinds.inc. */
#define TG_KIND_SEVERITY 0x01u   /* flags: see core/report_kinds.inc */
#define TG_KIND_DEDUP 0x02u
#define TG_KIND_TRACE 0x04u
#define TG_KIND_HALT_RACE 0x08u
#define TG_KIND_HALT_ABORT 0x10u
#define TG_KIND_PREVENTED 0x20u
/* A repeats record of a prevented race tells apart this many other kernels. */
#define TG_OTHER_KERNELS_KEPT 16
#define TG_KIND_INFO 0x40u

enum tg_report_kind {
#define TG_REPORT_KIND(ID, json, title, what, body, supp, flags, exit) TG_REPORT_##ID,
#include "core/report_kinds.inc"
#undef TG_REPORT_KIND
    TG_REPORT_NKINDS
};

/* A kind's row, for code that goes by r->kind rather than by the X-macro. */
struct tg_report_kind_info {
    const char *json;   /* JSON Lines "kind" */
    const char *title;  /* WARNING line */
    const char *what;   /* SUMMARY line */
    const char *supp;   /* suppression type, NULL: none */
    unsigned flags;     /* TG_KIND_* */
};
extern const struct tg_report_kind_info tg_report_kinds[TG_REPORT_NKINDS];

/* Whether a written report of kind K fails the run: the one rule of the
 * library's exitcode= and of `tunerguard report`'s exit status.  Reports of
 * informational kinds (TG_KIND_INFO) do not, nor a low-severity overlap (LOW
 * on a TG_KIND_SEVERITY kind: written at verbosity>=1), nor a race a
 * serialize wait prevented (SERIALIZED on a TG_KIND_PREVENTED kind) unless
 * PREVENTED_IS_RACE.  Pure; K out of range: fails. */
int tg_report_fails(enum tg_report_kind k, int serialized, int low, int prevented_is_race);

/* The kind whose JSON Lines "kind" is JSON; TG_REPORT_NKINDS when none
 * (the "fatal" record is written apart, reports/fatal.c).  Pure. */
enum tg_report_kind tg_report_kind_of_json(const char *json);

/* TG_REPORT_INTERFERENCE: what else ran on the device during a benchmark. */
#define TG_ITF_REPORT_FROM 8
struct tg_itf_report {
    int device;                /* device benchmarked on */
    uint64_t foreign;          /* kernels other threads launched on it meanwhile */
    uint64_t own;              /* the benchmarking thread's own launches there */
    char cuda_kernel[TG_KERNEL_NAME_LEN]; /* CUDA name of the kernel benchmarked, "" if unknown
                                  (demangled: as the view's cuda_kernel) */
    char cuda_kernel_mangled[TG_KERNEL_NAME_LEN];
    char best_config[200];     /* str() of the tuner's best_config after the session, "" if none */
    int nfrom;                 /* entries in from[] (a sample: at most TG_ITF_REPORT_FROM) */
    struct {
        pid_t tid;             /* a launching thread */
        uint64_t func;         /* CUfunction / CUkernel / CUgraphExec it launched */
        char kernel[TG_KERNEL_NAME_LEN]; /* its name, "" if unknown (demangled, as cuda_kernel) */
        char kernel_mangled[TG_KERNEL_NAME_LEN];
    } from[TG_ITF_REPORT_FROM];
    /* cupti=1 (docs/cupti.md): the verdict came from GPU intervals */
    int gpu;                   /* 1: the fields below are valid */
    uint64_t overlap_ns;       /* foreign kernel execution inside the benchmark's timed intervals */
    uint64_t timed_ns;         /* those intervals in total */
    uint32_t own_kernels, foreign_kernels;
    int ngpu;                  /* entries in gpu_by[], most overlap first */
    struct {
        pid_t tid;             /* launching thread, 0 if unknown */
        uint32_t stream;       /* CUPTI stream id */
        uint32_t count;        /* kernels of that name/thread/stream that overlapped */
        uint64_t overlap_ns;   /* their overlap */
        char kernel[TG_KERNEL_NAME_LEN]; /* demangled, as cuda_kernel */
        char kernel_mangled[TG_KERNEL_NAME_LEN];
    } gpu_by[TG_ITF_REPORT_FROM];
};

/* TG_REPORT_DEADLOCK: the cycle of waits serialize found.  The entering
 * thread waits for cycle[0]; the holder of cycle[k] waits for cycle[k+1];
 * the last is held by the entering thread. */
#define TG_CYCLE_MAX 16
struct tg_deadlock_report {
    int n;                     /* entries in cycle[] */
    struct {
        pid_t holder;          /* the thread holding it, 0 none found */
        char kernel[64];       /* its kernel's name, "" if unknown */
    } cycle[TG_CYCLE_MAX];
    int abort;                 /* deadlock=abort: the process stops; else the
                                  entering thread proceeds unserialized */
};

/* TG_REPORT_WAIT_TIMEOUT: a serialize wait that lasted wait_timeout. */
struct tg_wait_report {
    uint64_t waited_ns;        /* how long the entering thread had waited */
    uint64_t stalled_ns;       /* > 0: the holder made no progress (no CPU time, no CUDA
                                  call) that long, blocked outside tunerguard, and the
                                  entering thread proceeds unserialized; 0: the wait goes on */
    int timeout_s;             /* wait_timeout= */
    int on_timeout_proceed;    /* on_wait_timeout=proceed (else wait) */
};

/* TG_REPORT_METHOD_REPLACED: what the guarded method's class attribute is now. */
struct tg_replaced_report {
    char qualname[160];        /* the new attribute's __qualname__, "" unknown */
    char file[200];            /* where its code is defined, "" unknown (no code) */
    int line;                  /* ... its first line, 0 unknown */
};

struct tg_report {
    enum tg_report_kind kind;
    uint64_t seq;              /* 1, 2, ... within this process */
    uint32_t supp_ref;         /* set by tg_emit when a suppression matched: its
                                  index + 1 (tg_supp_count_again) */
    uint32_t dedup_ref;        /* set by tg_emit (reports/emit.h): the de-duplication slot
                                  of a written or repeated report + 1, 0 none */
    pid_t pid;
    int rank;                  /* tg_proc_rank(): $RANK, -1 if unset or not a rank */
    const char *mode;          /* "detect" | "serialize" */
    int high_severity;         /* thread inside was benchmarking */
    int serialized;            /* serialize mode: the entering thread waited */
    int seen_at_exit;          /* TG_REPORT_RACE: seen when the thread inside returned
                                  (clearing the tuner's arguments) while the entering
                                  thread was benchmarking, not at the entry */
    int seen_at_tuning;        /* TG_REPORT_RACE: seen when the entering thread began tuning and
                                  found its arguments cleared (self.nargs = None) by another call
                                  that entered and returned meanwhile; inside is unknown (empty) */
    int seen_at_step;          /* TG_REPORT_RACE on a declared tuner: seen when the entering thread,
                                  inside the tuner already, entered its tuning step (step) while
                                  the other thread's call was inside */
    int without_gil;           /* TG_REPORT_RACE not prevented, of a tuner that keeps its call's
                                  arguments on itself (Triton's Autotuner): the GIL was off (a
                                  free-threaded build), the threads ran at once, so every overlap of
                                  its calls is a race, tuned key or not (high_severity) */
    int declared;              /* the tuner was declared with targets= (none of the built-in ones) */
    char step[64];             /* TG_REPORT_RACE on a declared tuner: the tuning step (tuning=)
                                  the thread inside was in, "Tuner.measure"; "" none */
    char tuner_class[96];      /* e.g. "triton.runtime.autotuner.Autotuner" */
    char method[64];           /* e.g. "Autotuner.run" */
    char kernel[128];          /* kernel function name, "?" if unknown */
    uintptr_t instance;        /* address of the tuner object */
    uint64_t ts_ns;            /* CLOCK_MONOTONIC at detection */
    struct tg_thread_view entering;  /* the thread that came in second */
    struct tg_thread_view inside;    /* the thread already inside */
    char exc_type[64];         /* TG_REPORT_EXCEPTION: the exception's type name */
    char exc_msg[200];         /* ... and str() of it, truncated */
    uint64_t race_seq;         /* TG_REPORT_EXCEPTION: seq of the race report it follows, 0 if none */
    uint64_t repeats;          /* TG_REPORT_REPEATS: how many times race report race_seq was seen again */
    enum tg_report_kind repeat_of; /* TG_REPORT_REPEATS: the kind of report race_seq */
    int other_kernels;         /* TG_REPORT_REPEATS of a prevented race: how many kernels besides
                                  report race_seq's were prevented at the same call sites
                                  (at most TG_OTHER_KERNELS_KEPT are told apart) */
    char other_names[3][128];  /* ... the first of them, "" past other_kernels */
    struct tg_itf_report itf;  /* TG_REPORT_INTERFERENCE only */
    struct tg_deadlock_report deadlock;   /* TG_REPORT_DEADLOCK only */
    struct tg_wait_report wait;           /* TG_REPORT_WAIT_TIMEOUT only */
    struct tg_replaced_report replaced;   /* TG_REPORT_METHOD_REPLACED only */
};

#endif
