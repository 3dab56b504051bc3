/* CUDA driver hooks: the real-pointer table, the generated wrappers, the
 * cuGetProcAddress[_v2] wrappers, identification by address, lazy init and
 * fork handling.  The list of variants is core/cuda_api.inc; what one
 * wrapper records is cuda/cuda_record.h.
 *
 * Init is lock-free and idempotent: the first libcuda pointer seen (by dlsym,
 * cuGetProcAddress or a PLT call) resolves the table with the real dlsym;
 * threads racing to do it store identical values, then publish `ready` with a
 * release store.  No lock is ever held across a driver call, and init makes
 * no driver call at all (nvshare #27: a re-entrant driver deadlocks a
 * pthread_once init). */
#include "cuda/cuda_hooks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "reports/trace.h"
#include "cuda/cuda_record.h"
#include "loader/core_api.h"
#include "core/clock.h"
#include "core/insitu.h"
#include "core/log.h"
#include "core/options.h"
#include "core/thread_state.h"

/* ---- the table ------------------------------------------------------------------ */

static const char *const tg__cuda_names[TG_CUDA_NFN] = {
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) #name,
#define TG_CUDA_GPA(name, params, args) #name,
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
};

static const unsigned char tg__cuda_kinds[TG_CUDA_NFN] = {
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) TG_CUDA_##kind,
#define TG_CUDA_GPA(name, params, args) TG_CUDA_OTHER,
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
};

/* real[i] = dlsym(libcuda, names[i]); NULL until resolved or if absent */
static void *_Atomic tg__cuda_real_tab[TG_CUDA_NFN];

/* ---- the wrappers ------------------------------------------------------------------ */

/* The in-situ profile build (core/insitu.h): the hook's cycles less the real call's. */
#ifdef TG_INSITU
#define TG_IS_BEGIN() const uint64_t is0_ = TG_IS_TICKS(); uint64_t is1_ = 0, is2_ = 0
#define TG_IS_REAL_BEGIN() is1_ = TG_IS_TICKS()
#define TG_IS_REAL_END() is2_ = TG_IS_TICKS()
#define TG_IS_END(t)                                                                      \
    do {                                                                                  \
        if (t) {                                                                          \
            tg__insitu_add(t, TG_IS_HCALLS, 1);                                           \
            tg__insitu_add(t, TG_IS_HOWN, TG_IS_TICKS() - is0_ - (is2_ - is1_));          \
            tg__insitu_add(t, TG_IS_HREAL, is2_ - is1_);                                  \
        }                                                                                 \
    } while (0)
#else
#define TG_IS_BEGIN() (void)0
#define TG_IS_REAL_BEGIN() (void)0
#define TG_IS_REAL_END() (void)0
#define TG_IS_END(t) (void)0
#endif

/* Every wrapper: pass straight through when off or busy (tg__cuda_enter gives
 * NULL), else record, call the real variant, record the return.  The real
 * pointer is non-NULL: a wrapper is only handed out for a resolved row, and
 * the exported definitions (interpose_cuda.c) check before calling. */
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func)                           \
    typedef CUresult (*tg__pfn_##name) params;                                            \
    CUresult tg__cuda_w_##name params                                                     \
    {                                                                                     \
        TG_IS_BEGIN();                                                                    \
        tg__pfn_##name real_ = (tg__pfn_##name)atomic_load_explicit(                      \
            &tg__cuda_real_tab[TG_FN_##name], memory_order_relaxed);                      \
        struct tg_thread *t_ = tg__cuda_enter(TG_FN_##name, TG_CUDA_##kind, (CUstream)(stream), \
                                              (CUcontext)(ctx), (uint64_t)(uintptr_t)(func)); \
        if (!t_ && TG_FN_##name != TG_FN_cuStreamDestroy_v2)                              \
            return real_ args;                                                            \
        TG_IS_REAL_BEGIN();                                                               \
        CUresult rc_ = real_ args;                                                        \
        TG_IS_REAL_END();                                                                 \
        if (TG_FN_##name == TG_FN_cuStreamDestroy_v2) /* its handle may be reused now */  \
            atomic_fetch_add_explicit(&tg__cuda_gen, 1, memory_order_relaxed);            \
        if (t_)                                                                           \
            tg__cuda_leave(t_, TG_CUDA_##kind);                                           \
        if (__builtin_expect(tg_trace_on, 0) && t_ && TG_CUDA_##kind != TG_CUDA_OTHER)   \
            tg_trace_cuda(t_, &t_->last, tg_ticks_to_ns(t_->last.t_enter),                 \
                          tg_ticks_to_ns(t_->last.t_exit)); /* trace=1: reports/trace.h */     \
        TG_IS_END(t_);                                                                    \
        return rc_;                                                                       \
    }
#define TG_CUDA_GPA(name, params, args)
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA

/* cuGetProcAddress[_v2]: the real lookup first (its status and result code
 * are passed back untouched), then the pointer it returned is identified by
 * address.  This also replaces the self-reference gpa("cuGetProcAddress"),
 * by the wrapper of whichever ABI the driver actually returned. */
static void tg__cuda_gpa_count(unsigned fn)
{
    struct tg_thread *t = tg__self();
    if (tg_opts.mode != TG_MODE_OFF && t->busy == 0)
        tg__cuda_count_inc(t, fn);
}

CUresult tg__cuda_w_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags)
{
    CUresult (*real_)(const char *, void **, int, cuuint64_t) = (CUresult(*)(
        const char *, void **, int, cuuint64_t))atomic_load_explicit(
        &tg__cuda_real_tab[TG_FN_cuGetProcAddress], memory_order_relaxed);
    CUresult rc = real_(symbol, pfn, cudaVersion, flags);
    tg__cuda_gpa_count(TG_FN_cuGetProcAddress);
    if (rc == CUDA_SUCCESS && pfn && *pfn)
        *pfn = tg__cuda_wrap(*pfn);
    return rc;
}

CUresult tg__cuda_w_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult (*real_)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))
            atomic_load_explicit(&tg__cuda_real_tab[TG_FN_cuGetProcAddress_v2], memory_order_relaxed);
    CUresult rc = real_(symbol, pfn, cudaVersion, flags, symbolStatus);
    tg__cuda_gpa_count(TG_FN_cuGetProcAddress_v2);
    if (rc == CUDA_SUCCESS && pfn && *pfn)
        *pfn = tg__cuda_wrap(*pfn);
    return rc;
}

static void *const tg__cuda_wrappers[TG_CUDA_NFN] = {
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) (void *)tg__cuda_w_##name,
#define TG_CUDA_GPA(name, params, args) (void *)tg__cuda_w_##name,
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
};

/* ---- queries ------------------------------------------------------------------------ */

const char *tg_cuda_fn_name(unsigned fn)
{
    return fn < TG_CUDA_NFN ? tg__cuda_names[fn] : "?";
}

int tg_cuda_fn_kind(unsigned fn)
{
    return fn < TG_CUDA_NFN ? tg__cuda_kinds[fn] : TG_CUDA_NONE;
}

int tg_cuda_fn_index(const char *name)
{
    for (unsigned i = 0; name && i < TG_CUDA_NFN; i++)
        if (strcmp(tg__cuda_names[i], name) == 0)
            return (int)i;
    return -1;
}

void *tg__cuda_wrapper(unsigned fn)
{
    return fn < TG_CUDA_NFN ? tg__cuda_wrappers[fn] : NULL;
}

void *tg__cuda_real(unsigned fn)
{
    return fn < TG_CUDA_NFN ? atomic_load_explicit(&tg__cuda_real_tab[fn], memory_order_relaxed)
                            : NULL;
}

/* ---- init ------------------------------------------------------------------------------- */

/* Resolve every row and the support calls in `lib` (a libcuda handle), then
 * publish.  Allocates nothing of ours; dlsym may allocate inside glibc. */
static void tg__cuda_init_lib(void *lib)
{
    tg__dlsym_fn rd = tg__real_dlsym();
    for (unsigned i = 0; i < TG_CUDA_NFN; i++)
        atomic_store_explicit(&tg__cuda_real_tab[i], rd(lib, tg__cuda_names[i]), memory_order_relaxed);
#define TG__SUP_SET(field, sym)                                                            \
    atomic_store_explicit(&tg__cuda_sup.field, (__typeof__(tg__cuda_sup.field))rd(lib, sym), \
                          memory_order_relaxed)
    TG__SUP_SET(ctx_get_current, "cuCtxGetCurrent");
    TG__SUP_SET(stream_get_ctx, "cuStreamGetCtx");
    TG__SUP_SET(ctx_get_device, "cuCtxGetDevice");
    TG__SUP_SET(ctx_get_device_v2, "cuCtxGetDevice_v2");
    TG__SUP_SET(func_get_name, "cuFuncGetName");
    TG__SUP_SET(kernel_get_name, "cuKernelGetName");
#undef TG__SUP_SET
    /* Names this driver lacks (cuKernelGetName, cuLaunchKernelEx, ... on an
     * old one) left a dlerror() message.  Init runs only after a lookup that
     * succeeded (the caller's dlsym or cuGetProcAddress on libcuda, or a
     * dlopen(RTLD_NOLOAD) that found it), which cleared the error state; a
     * caller checking dlerror() after its successful dlsym must still see
     * none, so clear ours. */
    (void)dlerror();

    /* Before any hook records: the trace and report set-up, the clock's
     * reference sample, the fork-child list (the call counts). */
    tg_activate();
    tg__cuda_tell_first_use(); /* cuda/listener.h */
    static _Atomic int once;
    if (atomic_exchange(&once, 1) == 0) {
        Dl_info info;
        void *any = NULL;
        for (unsigned i = 0; !any && i < TG_CUDA_NFN; i++)
            any = tg__cuda_real(i);
        tg__info(2, "cuda: hooks armed on %s",
                 any && dladdr(any, &info) && info.dli_fname ? info.dli_fname : "libcuda");
        for (unsigned i = 0; i < TG_CUDA_NFN; i++)
            if (!tg__cuda_real(i))
                tg__cuda_missing(i);
    }
    atomic_store_explicit(&tg__cuda_ready, 1, memory_order_release);
}

void tg__cuda_missing(unsigned fn)
{
    static unsigned said[TG_CUDA_NFN]; /* once per row */
    if (fn >= TG_CUDA_NFN)
        return;
    tg__say_capped(&said[fn], 1, 1, "cuda: the driver lacks %s; calls to it are not seen (passed through)",
                   tg__cuda_names[fn]);
}

/* Is p an address inside a library named libcuda.so*?  Then resolve from it. */
static void tg__cuda_init_from(void *p)
{
    Dl_info info;
    if (!dladdr(p, &info) || !info.dli_fname)
        return;
    const char *slash = strrchr(info.dli_fname, '/');
    const char *base = slash ? slash + 1 : info.dli_fname;
    if (strncmp(base, "libcuda.so", 10) != 0)
        return;
    void *lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD); /* kept: pins libcuda */
    if (lib)
        tg__cuda_init_lib(lib);
}

int tg__cuda_init_loaded(void)
{
    if (tg_cuda_active())
        return 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib)
        tg__cuda_init_lib(lib);
    else
        (void)dlerror(); /* a probe: no error left pending for the program */
    return tg_cuda_active();
}

void *tg__cuda_wrap(void *p)
{
    if (!p || tg_opts.mode == TG_MODE_OFF)
        return p;
    if (!tg_cuda_active()) {
        tg__cuda_init_from(p);
        if (!tg_cuda_active())
            return p;
    }
    for (unsigned i = 0; i < TG_CUDA_NFN; i++)
        if (atomic_load_explicit(&tg__cuda_real_tab[i], memory_order_relaxed) == p)
            return tg__cuda_wrappers[i];
    return p;
}
