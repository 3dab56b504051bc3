/* A stand-in libcuda.so.1 for machines without a GPU (tests only).
 *
 * What it promises (notes/cuda-interception.md §5.4):
 *  - every driver variant tunerguard wraps is exported under its real name, at
 *    its own address;
 *  - cuGetProcAddress (4 args, v11030 ABI) and cuGetProcAddress_v2 (5 args)
 *    follow the real version/flag rules and return exactly those exported
 *    addresses (built with -Bsymbolic so that taking an address here never
 *    picks up an interposer's definition);
 *  - every call is logged (variant, tid): fakecuda.h;
 *  - a gate parks the next synchronize call (or the next call of one chosen
 *    variant) until a test opens it.
 * Handles are small heap objects kept in a registry, so a garbage handle gives
 * CUDA_ERROR_INVALID_HANDLE instead of a crash.  Nothing here ever touches a
 * GPU; launches do nothing and synchronizes return at once (unless gated). */
#include "fakecuda.h"

#include <cuda.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#undef cuGetProcAddress /* cuda.h maps it to _v2; the fake exports both ABIs */

#define FK_API __attribute__((visibility("default")))

/* FAKECUDA_OLD_DRIVER (a second build, tests/fakecuda/old/libcuda.so.1): an
 * 11.4-era driver that lacks the FK_NEW rows (cuLaunchKernelEx*,
 * cuCtxSynchronize_v2, cuLibrary*, cuGetProcAddress_v2, and the 12.3 kernel
 * name calls cuFuncGetName / cuKernelGetName) and reports version 11040, for
 * tunerguard's "driver lacks an entry point" path. */
#ifdef FAKECUDA_OLD_DRIVER
#define FK_NEW(row)
#define FK_DEFAULT_VERSION 11040
#else
#define FK_NEW(row) row
#define FK_DEFAULT_VERSION 13000
#endif

/* ---- the variant list: FK(exported name, base name, introduced, per-thread) */
#define FK_VARIANTS(FK)                                                        \
    FK(cuLaunchKernel, cuLaunchKernel, 4000, 0)                                \
    FK(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, 1)                           \
    FK_NEW(FK(cuLaunchKernelEx, cuLaunchKernelEx, 11060, 0))                  \
    FK_NEW(FK(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, 1))             \
    FK(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, 0)          \
    FK(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000, 1)     \
    FK(cuGraphLaunch, cuGraphLaunch, 10000, 0)                                 \
    FK(cuGraphLaunch_ptsz, cuGraphLaunch, 10000, 1)                            \
    FK(cuStreamSynchronize, cuStreamSynchronize, 2000, 0)                      \
    FK(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, 1)                 \
    FK(cuCtxSynchronize, cuCtxSynchronize, 2000, 0)                            \
    FK_NEW(FK(cuCtxSynchronize_v2, cuCtxSynchronize, 13000, 0))               \
    FK(cuEventSynchronize, cuEventSynchronize, 2000, 0)                        \
    FK(cuStreamWaitEvent, cuStreamWaitEvent, 3020, 0)                          \
    FK(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, 7000, 1)                     \
    FK(cuStreamQuery, cuStreamQuery, 2000, 0)                                  \
    FK(cuStreamQuery_ptsz, cuStreamQuery, 7000, 1)                             \
    FK(cuEventQuery, cuEventQuery, 2000, 0)                                    \
    FK(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, 0)                                 \
    FK(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 7000, 1)                            \
    FK(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, 0)                       \
    FK(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, 7000, 1)                  \
    FK(cuModuleLoadData, cuModuleLoadData, 2000, 0)                            \
    FK(cuModuleGetFunction, cuModuleGetFunction, 2000, 0)                      \
    FK_NEW(FK(cuLibraryLoadData, cuLibraryLoadData, 12000, 0))                \
    FK_NEW(FK(cuLibraryGetKernel, cuLibraryGetKernel, 12000, 0))              \
    FK(cuInit, cuInit, 2000, 0)                                                \
    FK(cuDriverGetVersion, cuDriverGetVersion, 2020, 0)                        \
    FK(cuDeviceGetCount, cuDeviceGetCount, 2000, 0)                            \
    FK(cuCtxGetCurrent, cuCtxGetCurrent, 4000, 0)                              \
    FK(cuCtxSetCurrent, cuCtxSetCurrent, 4000, 0)                              \
    FK(cuCtxGetDevice, cuCtxGetDevice, 2000, 0)                                \
    FK(cuCtxGetDevice_v2, cuCtxGetDevice, 13000, 0)                            \
    FK(cuStreamGetCtx, cuStreamGetCtx, 9020, 0)                                \
    FK(cuStreamGetId, cuStreamGetId, 12000, 0)                                 \
    FK(cuStreamCreate, cuStreamCreate, 2000, 0)                                \
    FK(cuStreamDestroy_v2, cuStreamDestroy, 4000, 0)                           \
    FK_NEW(FK(cuFuncGetName, cuFuncGetName, 12030, 0))                        \
    FK_NEW(FK(cuKernelGetName, cuKernelGetName, 12030, 0))                    \
    FK(cuGetErrorString, cuGetErrorString, 6000, 0)                            \
    FK(cuGetExportTable, cuGetExportTable, 3000, 0)                            \
    FK(cuGetProcAddress, cuGetProcAddress, 11030, 0)                           \
    FK_NEW(FK(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0))

enum fk_id {
#define FK_ENUM(name, base, intro, pt) FK_##name,
    FK_VARIANTS(FK_ENUM)
#undef FK_ENUM
    FK_V99, /* the unexported cuLaunchKernel variant (fakecuda.h) */
    FK_N
};

static const char *const fk_names[FK_N] = {
#define FK_NAME(name, base, intro, pt) #name,
    FK_VARIANTS(FK_NAME)
#undef FK_NAME
    "cuLaunchKernel_v99",
};

/* ---- call log -------------------------------------------------------------- */

#define FK_LOG_CAP 65536
struct fk_entry {
    int id;
    int tid;
};
static struct fk_entry fk_log[FK_LOG_CAP];
static _Atomic unsigned long long fk_next;
static _Atomic unsigned long long fk_counts[FK_N];

static int fk_tid(void)
{
    static __thread int tid;
    if (!tid)
        tid = (int)syscall(SYS_gettid);
    return tid;
}

static void fk_log_call(enum fk_id id)
{
    unsigned long long i = atomic_fetch_add(&fk_next, 1);
    if (i < FK_LOG_CAP) {
        fk_log[i].tid = fk_tid();
        fk_log[i].id = (int)id;
    }
    atomic_fetch_add(&fk_counts[id], 1);
}

static int fk_lookup_name(const char *variant)
{
    for (int i = 0; i < FK_N; i++)
        if (variant && strcmp(fk_names[i], variant) == 0)
            return i;
    return -1;
}

FK_API unsigned long long fakecuda_calls(void)
{
    unsigned long long n = 0;
    for (int i = 0; i < FK_N; i++)
        n += atomic_load(&fk_counts[i]);
    return n;
}

FK_API unsigned long long fakecuda_count(const char *variant)
{
    int i = fk_lookup_name(variant);
    return i < 0 ? 0 : atomic_load(&fk_counts[i]);
}

FK_API unsigned long long fakecuda_count_tid(const char *variant, int tid)
{
    int id = fk_lookup_name(variant);
    unsigned long long n = atomic_load(&fk_next), c = 0;
    if (n > FK_LOG_CAP)
        n = FK_LOG_CAP;
    for (unsigned long long i = 0; i < n; i++)
        if (fk_log[i].id == id && fk_log[i].tid == tid)
            c++;
    return c;
}

FK_API const char *fakecuda_log_entry(unsigned long long i, int *tid)
{
    if (i >= atomic_load(&fk_next) || i >= FK_LOG_CAP)
        return NULL;
    if (tid)
        *tid = fk_log[i].tid;
    return fk_names[fk_log[i].id];
}

FK_API void fakecuda_reset(void)
{
    atomic_store(&fk_next, 0);
    for (int i = 0; i < FK_N; i++)
        atomic_store(&fk_counts[i], 0);
}

/* ---- the gate ---------------------------------------------------------------- */

static pthread_mutex_t fk_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fk_gate_cv = PTHREAD_COND_INITIALIZER;
static int fk_gate_armed;
static int fk_gate_target = -1; /* the variant that parks (fakecuda_gate_arm_on); -1: synchronizes */
static int fk_gate_parked; /* tid, 0 if none */
static unsigned fk_gate_gen;  /* bumped by open */

static void fk_deadline(struct timespec *ts, double s)
{
    clock_gettime(CLOCK_REALTIME, ts);
    long long ns = ts->tv_nsec + (long long)(s * 1e9);
    ts->tv_sec += (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

/* Called by every synchronize entry point (sync = 1) and by the other
 * variants fakecuda_gate_arm_on supports (sync = 0), with their id.  Parks at
 * most 60 s, so a broken test fails rather than hangs. */
static void fk_gate_at(int id, int sync)
{
    pthread_mutex_lock(&fk_gate_mu);
    if (fk_gate_armed && !fk_gate_parked && (fk_gate_target < 0 ? sync : fk_gate_target == id)) {
        fk_gate_armed = 0;
        fk_gate_parked = fk_tid();
        unsigned gen = fk_gate_gen;
        pthread_cond_broadcast(&fk_gate_cv);
        struct timespec dl;
        fk_deadline(&dl, 60.0);
        while (fk_gate_gen == gen)
            if (pthread_cond_timedwait(&fk_gate_cv, &fk_gate_mu, &dl) == ETIMEDOUT)
                break;
        fk_gate_parked = 0;
        pthread_cond_broadcast(&fk_gate_cv);
    }
    pthread_mutex_unlock(&fk_gate_mu);
}

#define fk_gate(id) fk_gate_at((id), 1)

static int fk_gate_arm_target(int target)
{
    pthread_mutex_lock(&fk_gate_mu);
    int rc = fk_gate_parked ? -1 : 0;
    if (!rc) {
        fk_gate_armed = 1;
        fk_gate_target = target;
    }
    pthread_mutex_unlock(&fk_gate_mu);
    return rc;
}

FK_API int fakecuda_gate_arm(void)
{
    return fk_gate_arm_target(-1);
}

FK_API int fakecuda_gate_arm_on(const char *variant)
{
    int id = fk_lookup_name(variant);
    return id < 0 ? -1 : fk_gate_arm_target(id);
}

FK_API int fakecuda_gate_wait_parked(double timeout_s)
{
    struct timespec dl;
    fk_deadline(&dl, timeout_s > 60.0 ? 60.0 : timeout_s);
    pthread_mutex_lock(&fk_gate_mu);
    while (!fk_gate_parked)
        if (pthread_cond_timedwait(&fk_gate_cv, &fk_gate_mu, &dl) == ETIMEDOUT)
            break;
    int rc = fk_gate_parked != 0;
    pthread_mutex_unlock(&fk_gate_mu);
    return rc;
}

FK_API void fakecuda_gate_open(void)
{
    pthread_mutex_lock(&fk_gate_mu);
    fk_gate_armed = 0;
    fk_gate_gen++;
    pthread_cond_broadcast(&fk_gate_cv);
    pthread_mutex_unlock(&fk_gate_mu);
}

FK_API int fakecuda_gate_parked_tid(void)
{
    pthread_mutex_lock(&fk_gate_mu);
    int tid = fk_gate_parked;
    pthread_mutex_unlock(&fk_gate_mu);
    return tid;
}

/* ---- handles ------------------------------------------------------------------ */

enum fk_kind { FK_H_STREAM = 1, FK_H_MODULE, FK_H_FUNC, FK_H_LIBRARY, FK_H_KERNEL };
struct fk_handle {
    int kind;
    int dead;
    CUcontext ctx;            /* streams */
    unsigned long long id;    /* streams */
    char name[64];            /* modules, functions, libraries, kernels */
};
#define FK_MAX_HANDLES 4096
static struct fk_handle *fk_handles[FK_MAX_HANDLES];
static int fk_nhandles;
static pthread_mutex_t fk_handle_mu = PTHREAD_MUTEX_INITIALIZER;

static struct fk_handle *fk_new(int kind, const char *name)
{
    struct fk_handle *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->kind = kind;
    if (name)
        strncpy(h->name, name, sizeof h->name - 1);
    pthread_mutex_lock(&fk_handle_mu);
    if (fk_nhandles == FK_MAX_HANDLES) {
        pthread_mutex_unlock(&fk_handle_mu);
        free(h);
        return NULL;
    }
    fk_handles[fk_nhandles++] = h;
    h->id = (unsigned long long)fk_nhandles;
    pthread_mutex_unlock(&fk_handle_mu);
    return h;
}

static struct fk_handle *fk_get(const void *p, int kind)
{
    struct fk_handle *r = NULL;
    pthread_mutex_lock(&fk_handle_mu);
    for (int i = 0; i < fk_nhandles; i++)
        if (fk_handles[i] == p && fk_handles[i]->kind == kind && !fk_handles[i]->dead)
            r = fk_handles[i];
    pthread_mutex_unlock(&fk_handle_mu);
    return r;
}

/* Contexts: one per fake device, 4 devices.  Current context per thread,
 * device 0's by default. */
struct fk_ctx {
    int dev;
};
static struct fk_ctx fk_ctxs[4] = {{0}, {1}, {2}, {3}};
static __thread CUcontext fk_cur = (CUcontext)&fk_ctxs[0];

static int fk_ctx_dev(CUcontext c)
{
    for (int i = 0; i < 4; i++)
        if (c == (CUcontext)&fk_ctxs[i])
            return i;
    return -1;
}

FK_API void *fakecuda_ctx(int dev)
{
    return dev >= 0 && dev < 4 ? (void *)&fk_ctxs[dev] : NULL;
}

static int fk_driver_version;

FK_API void fakecuda_set_driver_version(int v)
{
    fk_driver_version = v;
}

static int fk_version(void)
{
    if (!fk_driver_version) {
        const char *e = getenv("FAKECUDA_DRIVER_VERSION");
        fk_driver_version = e && *e ? atoi(e) : FK_DEFAULT_VERSION;
    }
    return fk_driver_version;
}

/* ---- launches ------------------------------------------------------------------ */

#define FK_LAUNCH_PARAMS                                                          \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void **params, \
     void **extra)

FK_API CUresult cuLaunchKernel FK_LAUNCH_PARAMS { fk_log_call(FK_cuLaunchKernel); return CUDA_SUCCESS; }
FK_API CUresult cuLaunchKernel_ptsz FK_LAUNCH_PARAMS { fk_log_call(FK_cuLaunchKernel_ptsz); return CUDA_SUCCESS; }
static CUresult fk_launch_v99 FK_LAUNCH_PARAMS { fk_log_call(FK_V99); return CUDA_SUCCESS; }

FK_API void *fakecuda_unexported_launch(void)
{
    return (void *)fk_launch_v99;
}

#ifndef FAKECUDA_OLD_DRIVER
FK_API CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
    fk_log_call(FK_cuLaunchKernelEx);
    return CUDA_SUCCESS;
}
FK_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
    fk_log_call(FK_cuLaunchKernelEx_ptsz);
    return CUDA_SUCCESS;
}
#endif

#define FK_COOP_PARAMS                                                            \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void **params)
FK_API CUresult cuLaunchCooperativeKernel FK_COOP_PARAMS { fk_log_call(FK_cuLaunchCooperativeKernel); return CUDA_SUCCESS; }
FK_API CUresult cuLaunchCooperativeKernel_ptsz FK_COOP_PARAMS { fk_log_call(FK_cuLaunchCooperativeKernel_ptsz); return CUDA_SUCCESS; }

FK_API CUresult cuGraphLaunch(CUgraphExec g, CUstream s) { fk_log_call(FK_cuGraphLaunch); return CUDA_SUCCESS; }
FK_API CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s) { fk_log_call(FK_cuGraphLaunch_ptsz); return CUDA_SUCCESS; }

/* ---- synchronization -------------------------------------------------------------- */

FK_API CUresult cuStreamSynchronize(CUstream s) { fk_log_call(FK_cuStreamSynchronize); fk_gate(FK_cuStreamSynchronize); return CUDA_SUCCESS; }
FK_API CUresult cuStreamSynchronize_ptsz(CUstream s) { fk_log_call(FK_cuStreamSynchronize_ptsz); fk_gate(FK_cuStreamSynchronize_ptsz); return CUDA_SUCCESS; }
FK_API CUresult cuCtxSynchronize(void) { fk_log_call(FK_cuCtxSynchronize); fk_gate(FK_cuCtxSynchronize); return CUDA_SUCCESS; }
#ifndef FAKECUDA_OLD_DRIVER
FK_API CUresult cuCtxSynchronize_v2(CUcontext c) { fk_log_call(FK_cuCtxSynchronize_v2); fk_gate(FK_cuCtxSynchronize_v2); return CUDA_SUCCESS; }
#endif
FK_API CUresult cuEventSynchronize(CUevent e) { fk_log_call(FK_cuEventSynchronize); fk_gate(FK_cuEventSynchronize); return CUDA_SUCCESS; }
FK_API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int fl) { fk_log_call(FK_cuStreamWaitEvent); return CUDA_SUCCESS; }
FK_API CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int fl) { fk_log_call(FK_cuStreamWaitEvent_ptsz); return CUDA_SUCCESS; }
FK_API CUresult cuStreamQuery(CUstream s) { fk_log_call(FK_cuStreamQuery); return CUDA_SUCCESS; }
FK_API CUresult cuStreamQuery_ptsz(CUstream s) { fk_log_call(FK_cuStreamQuery_ptsz); return CUDA_SUCCESS; }
FK_API CUresult cuEventQuery(CUevent e) { fk_log_call(FK_cuEventQuery); return CUDA_SUCCESS; }

FK_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { fk_log_call(FK_cuMemcpyDtoH_v2); return CUDA_SUCCESS; }
FK_API CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n) { fk_log_call(FK_cuMemcpyDtoH_v2_ptds); return CUDA_SUCCESS; }
FK_API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) { fk_log_call(FK_cuMemcpyDtoHAsync_v2); return CUDA_SUCCESS; }
FK_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s) { fk_log_call(FK_cuMemcpyDtoHAsync_v2_ptsz); return CUDA_SUCCESS; }

/* ---- modules and libraries: the "image" is a NUL-terminated module name ---- */

FK_API CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    fk_log_call(FK_cuModuleLoadData);
    if (!m || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct fk_handle *h = fk_new(FK_H_MODULE, image);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *m = (CUmodule)h;
    return CUDA_SUCCESS;
}

FK_API CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    fk_log_call(FK_cuModuleGetFunction);
    if (!f || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fk_get(m, FK_H_MODULE))
        return CUDA_ERROR_INVALID_HANDLE;
    struct fk_handle *h = fk_new(FK_H_FUNC, name);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *f = (CUfunction)h;
    return CUDA_SUCCESS;
}

#ifndef FAKECUDA_OLD_DRIVER
FK_API CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,
                                  unsigned int nj, CUlibraryOption *lo, void **lv, unsigned int nl)
{
    fk_log_call(FK_cuLibraryLoadData);
    if (!lib || !code)
        return CUDA_ERROR_INVALID_VALUE;
    struct fk_handle *h = fk_new(FK_H_LIBRARY, code);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *lib = (CUlibrary)h;
    return CUDA_SUCCESS;
}

FK_API CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    fk_log_call(FK_cuLibraryGetKernel);
    if (!k || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fk_get(lib, FK_H_LIBRARY))
        return CUDA_ERROR_INVALID_HANDLE;
    struct fk_handle *h = fk_new(FK_H_KERNEL, name);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *k = (CUkernel)h;
    return CUDA_SUCCESS;
}
#endif

#ifndef FAKECUDA_OLD_DRIVER /* both came with 12.3 */
FK_API CUresult cuFuncGetName(const char **name, CUfunction f)
{
    fk_log_call(FK_cuFuncGetName);
    fk_gate_at(FK_cuFuncGetName, 0);
    struct fk_handle *h = fk_get(f, FK_H_FUNC);
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!h)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = h->name;
    return CUDA_SUCCESS;
}

FK_API CUresult cuKernelGetName(const char **name, CUkernel k)
{
    fk_log_call(FK_cuKernelGetName);
    struct fk_handle *h = fk_get(k, FK_H_KERNEL);
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!h)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = h->name;
    return CUDA_SUCCESS;
}
#endif

/* ---- contexts, streams, misc ------------------------------------------------------ */

FK_API CUresult cuInit(unsigned int flags) { fk_log_call(FK_cuInit); return CUDA_SUCCESS; }

FK_API CUresult cuDriverGetVersion(int *v)
{
    fk_log_call(FK_cuDriverGetVersion);
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = fk_version();
    return CUDA_SUCCESS;
}

/* Four devices, as fakecuda_ctx(0..3) has contexts for. */
FK_API CUresult cuDeviceGetCount(int *n)
{
    fk_log_call(FK_cuDeviceGetCount);
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    *n = 4;
    return CUDA_SUCCESS;
}

FK_API CUresult cuCtxGetCurrent(CUcontext *c)
{
    fk_log_call(FK_cuCtxGetCurrent);
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    *c = fk_cur;
    return CUDA_SUCCESS;
}

FK_API CUresult cuCtxSetCurrent(CUcontext c)
{
    fk_log_call(FK_cuCtxSetCurrent);
    if (c && fk_ctx_dev(c) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    fk_cur = c;
    return CUDA_SUCCESS;
}

FK_API CUresult cuCtxGetDevice(CUdevice *d)
{
    fk_log_call(FK_cuCtxGetDevice);
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fk_cur)
        return CUDA_ERROR_INVALID_CONTEXT;
    *d = fk_ctx_dev(fk_cur);
    return CUDA_SUCCESS;
}

FK_API CUresult cuCtxGetDevice_v2(CUdevice *d, CUcontext c)
{
    fk_log_call(FK_cuCtxGetDevice_v2);
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c)
        c = fk_cur;
    if (!c || fk_ctx_dev(c) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *d = fk_ctx_dev(c);
    return CUDA_SUCCESS;
}

static int fk_special_stream(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

FK_API CUresult cuStreamGetCtx(CUstream s, CUcontext *c)
{
    fk_log_call(FK_cuStreamGetCtx);
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (fk_special_stream(s)) {
        if (!fk_cur)
            return CUDA_ERROR_INVALID_CONTEXT;
        *c = fk_cur;
        return CUDA_SUCCESS;
    }
    struct fk_handle *h = fk_get(s, FK_H_STREAM);
    if (!h)
        return CUDA_ERROR_INVALID_HANDLE;
    *c = h->ctx;
    return CUDA_SUCCESS;
}

FK_API CUresult cuStreamGetId(CUstream s, unsigned long long *id)
{
    fk_log_call(FK_cuStreamGetId);
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    if (fk_special_stream(s)) {
        *id = (unsigned long long)(uintptr_t)s;
        return CUDA_SUCCESS;
    }
    struct fk_handle *h = fk_get(s, FK_H_STREAM);
    if (!h)
        return CUDA_ERROR_INVALID_HANDLE;
    *id = h->id;
    return CUDA_SUCCESS;
}

FK_API CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    fk_log_call(FK_cuStreamCreate);
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fk_cur)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct fk_handle *h = fk_new(FK_H_STREAM, NULL);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    h->ctx = fk_cur;
    *s = (CUstream)h;
    return CUDA_SUCCESS;
}

FK_API CUresult cuStreamDestroy_v2(CUstream s)
{
    fk_log_call(FK_cuStreamDestroy_v2);
    struct fk_handle *h = fk_get(s, FK_H_STREAM);
    if (!h)
        return CUDA_ERROR_INVALID_HANDLE;
    h->dead = 1; /* never freed: keeps handle addresses unique in a test */
    return CUDA_SUCCESS;
}

FK_API CUresult cuGetErrorString(CUresult e, const char **s)
{
    fk_log_call(FK_cuGetErrorString);
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    *s = e == CUDA_SUCCESS ? "no error" : "fake error";
    return CUDA_SUCCESS;
}

FK_API CUresult cuGetExportTable(const void **tbl, const CUuuid *id)
{
    fk_log_call(FK_cuGetExportTable);
    if (tbl)
        *tbl = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- cuGetProcAddress ---------------------------------------------------------------- */

struct fk_variant {
    const char *base;
    int intro;
    int per_thread;
    void *fn;
};

CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags);

static const struct fk_variant fk_variants[] = {
#define FK_ROW(name, base, intro, pt) {#base, intro, pt, (void *)name},
    FK_VARIANTS(FK_ROW)
#undef FK_ROW
    /* test-only: an unexported variant introduced in a "future" version */
    {"cuLaunchKernel", 13100, 0, (void *)fk_launch_v99},
};
#define FK_NVARIANTS (sizeof fk_variants / sizeof fk_variants[0])

FK_API void *fakecuda_addr(const char *variant)
{
    int i = fk_lookup_name(variant);
    return i < 0 || i >= FK_V99 ? NULL : fk_variants[i].fn;
}

/* The rules of the real driver (cuda.h, cuGetProcAddress): the newest variant
 * introduced at or before `ver`; with PER_THREAD_DEFAULT_STREAM the per-thread
 * one if any, else the legacy one; ver above the driver's: INVALID_VALUE;
 * unknown name: SUCCESS + NULL + SYMBOL_NOT_FOUND; known name, no variant old
 * enough: SUCCESS + NULL + VERSION_NOT_SUFFICIENT. */
static CUresult fk_gpa(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *st)
{
    if (!pfn || !symbol)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (ver > fk_version())
        return CUDA_ERROR_INVALID_VALUE;
    int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct fk_variant *best[2] = {NULL, NULL}; /* [legacy, per-thread] */
    int known = 0;
    for (size_t i = 0; i < FK_NVARIANTS; i++) {
        const struct fk_variant *v = &fk_variants[i];
        if (strcmp(v->base, symbol) != 0)
            continue;
        known = 1;
        if (v->intro > ver)
            continue;
        if (!best[v->per_thread] || v->intro > best[v->per_thread]->intro)
            best[v->per_thread] = v;
    }
    const struct fk_variant *pick = want_pt && best[1] ? best[1] : best[0];
    if (pick)
        *pfn = pick->fn;
    if (st)
        *st = pick ? CU_GET_PROC_ADDRESS_SUCCESS
                   : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                           : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

FK_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
    fk_log_call(FK_cuGetProcAddress);
    return fk_gpa(symbol, pfn, ver, flags, NULL);
}

#ifndef FAKECUDA_OLD_DRIVER
FK_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *st)
{
    fk_log_call(FK_cuGetProcAddress_v2);
    return fk_gpa(symbol, pfn, ver, flags, st);
}
#endif
