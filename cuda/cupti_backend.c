/* The opt-in CUPTI backend (cuda/cupti_backend.h, docs/cupti.md): its
 * start (dlopen'ed libcupti, the launch callbacks, the activity buffers),
 * the kernel records kept from CUPTI's buffers, the verdict on a benchmark
 * window, and giving CUPTI back at exit or to another client.  Finding
 * libcupti is cuda/cupti_find.c; the interposed calls of another client,
 * cuda/cupti_handover.c.
 *
 * Contracts: the launch callback (api_cb) runs on the launching thread
 * inside the launch and neither allocates nor locks; the buffer callbacks
 * run on CUPTI's thread (or the flushing one) under st_mu; the start
 * allocates the bounded buffers once; verdicts allocate and lock (never
 * on a hot path).  Nothing here is signal-safe. */
#include "cuda/cupti_backend.h"
#include "cuda/cupti_internal.h"
#include "loader/core_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "reports/trace.h"
#include "core/clock.h"
#include "core/hash.h"
#include "cuda/cuda_hooks.h"
#include "core/log.h"
#include "core/options.h"
#include "core/thread_state.h"
#include "cuda/tls.h"

enum { ST_OFF, ST_ACTIVE, ST_FAILED, ST_RELEASED };
static _Atomic int st_state;      /* enum above */
static _Atomic int st_once;       /* 1: a start was attempted (or is running) */
static void *st_lib;
static char st_libpath[512];
static CUpti_SubscriberHandle st_sub;
static int st_own_clock;          /* 1: timestamps are CLOCK_MONOTONIC (our callback) */
static int64_t st_offset;         /* else: mono - cupti, added to every timestamp */

/* ---- the real CUPTI entry points (from our handle, never our exports) ---- */
static struct {
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*get_timestamp)(uint64_t *);
    CUptiResult (*register_ts)(CUpti_TimestampCallbackFunc);
    CUptiResult (*result_string)(CUptiResult, const char **);
} cu;

/* ---- correlation (written by launching threads in the API callback) ----- */
static struct tg_gpu_corr *st_corr; /* malloc'ed at start, never freed */

/* ---- buffers and the kernel store (st_mu: never taken on a launch) ------ */
static pthread_mutex_t st_mu = PTHREAD_MUTEX_INITIALIZER;
#define NBUF 8
static uint8_t *st_buf[NBUF];
static int st_buf_free[NBUF];
static size_t st_bufsz;
static struct tg_gpu_kernel *st_store; /* ring */
static size_t st_cap;
static uint64_t st_n;                   /* kernels stored in total (ring index) */
static _Atomic uint64_t st_kernels, st_correlated, st_dropped;

#define NAMES 2048
#define NAME_LEN 128
static char (*st_names)[NAME_LEN];      /* interned kernel names (CUPTI's may die with cuptiFinalize) */
static uint64_t st_name_hash[NAMES];

static const char *intern(const char *s)
{
    if (!s || !s[0])
        return "?";
    uint64_t h = tg_hash_str(TG_HASH_SEED, s) | 1; /* 0: a free slot */
    for (unsigned p = 0; p < 16; p++) {
        unsigned i = (unsigned)(h + p) % NAMES;
        if (st_name_hash[i] == h && strncmp(st_names[i], s, NAME_LEN - 1) == 0)
            return st_names[i];
        if (st_name_hash[i] == 0) {
            st_name_hash[i] = h;
            snprintf(st_names[i], NAME_LEN, "%s", s);
            return st_names[i];
        }
    }
    return "(name table full)";
}

int tg_cupti_active(void)
{
    return atomic_load_explicit(&st_state, memory_order_relaxed) == ST_ACTIVE;
}

uint64_t tg_cupti_session_t0(void)
{
    return tg__cupti_sess_t0;
}

void tg_cupti_session_done(void)
{
    tg__cupti_sess_t0 = 0;
}

/* ---- CUPTI callbacks ------------------------------------------------------------ */

static uint64_t CUPTIAPI mono_ts(void)
{
    return tg_mono_ns();
}

/* On the launching thread, inside the launch API (cupti=1 only).  Cost: one
 * TLS read, one vDSO clock read, a few relaxed stores into the slot of this
 * correlation id.  No allocation, no lock, no syscall (tg__self's first-use
 * gettid aside, once per thread). */
static void CUPTIAPI api_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
    (void)ud;
    (void)dom;
    (void)cbid;
    const CUpti_CallbackData *d = data;
    if (atomic_load_explicit(&st_state, memory_order_relaxed) != ST_ACTIVE)
        return;
    uint64_t now = tg_mono_ns();
    if (d->callbackSite == CUPTI_API_ENTER) {
        struct tg_thread *t = tg__self();
        tg_gpu_corr_enter(st_corr, d->correlationId, t->tid, now);
        if (t->nheld == 0)
            tg__cupti_sess_t0 = 0;
        else if (!tg__cupti_sess_t0)
            tg__cupti_sess_t0 = now; /* first launch of this session */
    } else {
        tg_gpu_corr_exit(st_corr, d->correlationId, now);
    }
}

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* CUPTI asks rarely (once per filled buffer); a mutex here is fine */
    *buffer = NULL;
    *size = 0;
    *max_records = 0;
    pthread_mutex_lock(&st_mu);
    for (int i = 0; i < NBUF; i++)
        if (st_buf_free[i]) {
            st_buf_free[i] = 0;
            *buffer = st_buf[i];
            *size = st_bufsz;
            break;
        }
    pthread_mutex_unlock(&st_mu);
    /* none free: CUPTI drops records and counts them (reported at exit) */
}

static void store_kernel_unlocked(const CUpti_ActivityKernel10 *r)
{
    struct tg_gpu_kernel k;
    memset(&k, 0, sizeof k);
    k.start = r->start + (uint64_t)st_offset;
    k.end = r->end + (uint64_t)st_offset;
    k.dev = (int32_t)r->deviceId;
    k.stream = r->streamId;
    k.corr = r->correlationId;
    k.name = intern(r->name);
    if (tg_gpu_correlate(st_corr, &k))
        atomic_fetch_add_explicit(&st_correlated, 1, memory_order_relaxed);
    st_store[st_n % st_cap] = k;
    st_n++;
    atomic_fetch_add_explicit(&st_kernels, 1, memory_order_relaxed);
    if (tg_trace_on)
        tg_trace_gpu_kernel(k.tid, k.launch, k.launch_end, k.dev, k.stream, k.start, k.end, k.corr, k.name);
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    (void)size;
    pthread_mutex_lock(&st_mu);
    CUpti_Activity *rec = NULL;
    while (valid > 0 && cu.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL)
            store_kernel_unlocked((const CUpti_ActivityKernel10 *)rec);
    }
    size_t dropped = 0;
    if (cu.dropped && cu.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        atomic_fetch_add_explicit(&st_dropped, dropped, memory_order_relaxed);
    for (int i = 0; i < NBUF; i++)
        if (st_buf[i] == buffer)
            st_buf_free[i] = 1;
    pthread_mutex_unlock(&st_mu);
}

static void *sym(const char *name)
{
    return tg__real_dlsym()(st_lib, name);
}

static const char *err_str(CUptiResult r)
{
    const char *s = NULL;
    if (cu.result_string && cu.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "?";
}

/* ---- start ------------------------------------------------------------------------ */

static const CUpti_CallbackId drv_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,          CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};
static const CUpti_CallbackId rt_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,   CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,   CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};

static void fail(const char *fmt, const char *a, const char *b)
{
    atomic_store(&st_state, ST_FAILED);
    tg__warn(fmt, a, b);
}

static void start(void)
{
    st_lib = tg__cupti_find(st_libpath, sizeof st_libpath);
    if (!st_lib) {
        const char *kind = tg_opts.cupti_path[0] ? tg__cupti_not_regular(tg_opts.cupti_path) : NULL;
        if (kind)
            fail("cupti=1: cupti_path %s is not a regular file (%s); going on without GPU intervals",
                 tg_opts.cupti_path, kind);
        else if (tg_opts.cupti_path[0])
            fail("cupti=1: cannot load %s (%s); going on without GPU intervals", tg_opts.cupti_path, dlerror());
        else
            fail("cupti=1: no libcupti found (%s%s); going on without GPU intervals; set cupti_path=",
                 "searched: a loaded copy, the nvidia pip wheels, $CUDA_HOME, /usr/local/cuda", "");
        return;
    }
#define R(f, n) (*(void **)&cu.f = sym(n))
    R(subscribe, "cuptiSubscribe");
    R(subscribe_v2, "cuptiSubscribe_v2");
    R(unsubscribe, "cuptiUnsubscribe");
    R(enable_callback, "cuptiEnableCallback");
    R(register_callbacks, "cuptiActivityRegisterCallbacks");
    R(enable, "cuptiActivityEnable");
    R(disable, "cuptiActivityDisable");
    R(flush_all, "cuptiActivityFlushAll");
    R(next_record, "cuptiActivityGetNextRecord");
    R(dropped, "cuptiActivityGetNumDroppedRecords");
    R(get_timestamp, "cuptiGetTimestamp");
    R(register_ts, "cuptiActivityRegisterTimestampCallback");
    R(result_string, "cuptiGetResultString");
#undef R
    if (!cu.subscribe || !cu.unsubscribe || !cu.enable_callback || !cu.register_callbacks || !cu.enable ||
        !cu.disable || !cu.flush_all || !cu.next_record) {
        fail("cupti=1: %s lacks the activity/callback API%s; going on without GPU intervals", st_libpath, "");
        return;
    }
    /* memory, all bounded by cupti_buffer_kb: the activity buffers, and a
     * kernel store of as many bytes */
    size_t total = (size_t)tg_opts.cupti_buffer_kb * 1024;
    st_bufsz = (total / NBUF) & ~(size_t)7;
    st_cap = total / sizeof(struct tg_gpu_kernel);
    st_corr = calloc(1, sizeof *st_corr);
    st_store = calloc(st_cap, sizeof *st_store);
    st_names = calloc(NAMES, NAME_LEN);
    for (int i = 0; i < NBUF; i++) {
        st_buf[i] = aligned_alloc(8, st_bufsz);
        st_buf_free[i] = st_buf[i] != NULL;
    }
    if (!st_corr || !st_store || !st_names) {
        fail("cupti=1: out of memory for %s%s; going on without GPU intervals", "the buffers", "");
        return;
    }
    char old[256] = "";
    CUptiResult rc;
    if (cu.subscribe_v2) {
        CUpti_SubscriberParams p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        p.subscriberName = "tunerguard";
        p.oldSubscriberName = old;
        p.oldSubscriberSize = sizeof old;
        rc = cu.subscribe_v2(&st_sub, api_cb, NULL, &p);
    } else {
        rc = cu.subscribe(&st_sub, api_cb, NULL);
    }
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        fail("cupti=1: CUPTI already has a subscriber (%s: torch.profiler, Nsight or another tool); "
             "going on without GPU intervals%s", old[0] ? old : "unnamed", "");
        return;
    }
    if (rc != CUPTI_SUCCESS) {
        fail("cupti=1: cuptiSubscribe failed (%s)%s; going on without GPU intervals", err_str(rc), "");
        return;
    }
    /* timestamps in our clock when CUPTI lets us (CUPTI 12.x+), else an offset */
    st_own_clock = cu.register_ts && cu.register_ts(mono_ts) == CUPTI_SUCCESS;
    if (!st_own_clock && cu.get_timestamp) {
        uint64_t a = tg_mono_ns(), c = 0;
        cu.get_timestamp(&c);
        uint64_t b = tg_mono_ns();
        st_offset = (int64_t)((a + b) / 2) - (int64_t)c;
    }
    for (size_t i = 0; i < sizeof drv_cbids / sizeof *drv_cbids; i++)
        cu.enable_callback(1, st_sub, CUPTI_CB_DOMAIN_DRIVER_API, drv_cbids[i]);
    for (size_t i = 0; i < sizeof rt_cbids / sizeof *rt_cbids; i++)
        cu.enable_callback(1, st_sub, CUPTI_CB_DOMAIN_RUNTIME_API, rt_cbids[i]);
    rc = cu.register_callbacks(buf_requested, buf_completed);
    if (rc == CUPTI_SUCCESS)
        rc = cu.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (rc != CUPTI_SUCCESS) {
        cu.unsubscribe(st_sub);
        fail("cupti=1: cannot enable kernel activity records (%s)%s; going on without GPU intervals",
             err_str(rc), "");
        return;
    }
    atomic_store(&st_state, ST_ACTIVE);
    /* exit: flush while CUPTI and the driver are still there (atexit runs
     * before the loader's destructors, and a handler registered now before
     * the driver's own, registered at cuInit) */
    atexit(tg_cupti_shutdown);
    if (tg_opts.verbosity >= 1)
        tg__warn("cupti=1: GPU intervals from %s (%s timestamps, %d KB of buffers)", st_libpath,
                 st_own_clock ? "CLOCK_MONOTONIC" : "offset-corrected", tg_opts.cupti_buffer_kb);
}

int tg_cupti_maybe_start(int check_loaded)
{
    if (!tg_opts.cupti || tg_opts.mode == TG_MODE_OFF)
        return 0;
    if (atomic_load_explicit(&st_once, memory_order_relaxed))
        return tg_cupti_active();
    if (!tg_cuda_active() && !(check_loaded && tg__cuda_lib_loaded()))
        return 0; /* inert until libcuda shows up */
    if (atomic_exchange(&st_once, 1))
        return tg_cupti_active();
    struct tg_thread *t = tg__self();
    t->busy++; /* CUPTI's own driver calls are not the program's */
    start();
    t->busy--;
    return tg_cupti_active();
}

/* ---- flush, verdict, release ---------------------------------------------------- */

static void flush(void)
{
    struct tg_thread *t = tg__self();
    t->busy++;
    cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); /* buf_completed runs on this thread */
    t->busy--;
}

int tg_cupti_verdict(pid_t tid, int dev, uint64_t t0, uint64_t t1, struct tg_gpu_verdict *out)
{
    memset(out, 0, sizeof *out);
    if (!tg_cupti_active())
        return -1;
    flush();
    pthread_mutex_lock(&st_mu);
    uint64_t first = st_n > st_cap ? st_n - st_cap : 0;
    if (st_n > st_cap && st_store[first % st_cap].start > t0) {
        pthread_mutex_unlock(&st_mu);
        return -1; /* the window's start was overwritten: not enough evidence */
    }
    size_t n = 0;
    for (uint64_t i = first; i < st_n; i++) {
        const struct tg_gpu_kernel *k = &st_store[i % st_cap];
        n += k->dev == dev && k->end > t0 && k->start < t1 + 1000000000ull;
    }
    struct tg_gpu_kernel *ks = n ? malloc(n * sizeof *ks) : NULL;
    struct tg_gpu_ival *scratch = n ? malloc(2 * n * sizeof *scratch) : NULL;
    size_t m = 0;
    for (uint64_t i = first; ks && scratch && i < st_n && m < n; i++) {
        const struct tg_gpu_kernel *k = &st_store[i % st_cap];
        if (k->dev == dev && k->end > t0 && k->start < t1 + 1000000000ull)
            ks[m++] = *k;
    }
    pthread_mutex_unlock(&st_mu);
    struct tg_gpu_window w = {.tid = tid, .dev = dev, .t0 = t0, .t1 = t1};
    int rc = ks && scratch ? tg_gpu_verdict(ks, m, &w, scratch, out) : -1;
    free(ks);
    free(scratch);
    return rc;
}

/* Stop collecting and give CUPTI back.  Any thread. */
static void release(void)
{
    flush();
    cu.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cu.unsubscribe(st_sub);
}

void tg_cupti_shutdown(void)
{
    int expect = ST_ACTIVE;
    if (!atomic_compare_exchange_strong(&st_state, &expect, ST_OFF))
        goto summary;
    release();
summary:
    if (tg_opts.cupti && tg_opts.verbosity >= 1 && st_lib)
        tg__warn("cupti=1: %llu kernel records (%llu tied to a host launch), %llu dropped for lack of buffer",
                 (unsigned long long)atomic_load(&st_kernels), (unsigned long long)atomic_load(&st_correlated),
                 (unsigned long long)atomic_load(&st_dropped));
    else if (atomic_load(&st_dropped))
        tg__warn("cupti=1: CUPTI dropped %llu kernel records (all %d KB of buffers were full); raise cupti_buffer_kb",
                 (unsigned long long)atomic_load(&st_dropped), tg_opts.cupti_buffer_kb);
}

void tg_cupti_atfork_child(void)
{
    if (atomic_load(&st_state) == ST_ACTIVE)
        atomic_store(&st_state, ST_FAILED); /* CUPTI does not follow fork: nothing to flush here */
}

/* ---- another CUPTI client arrives (cuda/cupti_handover.c) -------------------- */

int tg__cupti_let_go(void)
{
    int expect = ST_ACTIVE;
    if (!atomic_compare_exchange_strong(&st_state, &expect, ST_RELEASED))
        return 0;
    release();
    return 1;
}

void *tg__cupti_own_sym(const char *name)
{
    return st_lib ? sym(name) : NULL;
}
