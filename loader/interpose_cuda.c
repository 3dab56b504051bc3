/* Exported cu* and cupti* definitions: the loader's forwarders.  What a
 * caller linked against libcuda (-lcuda: Triton's driver.c helpers,
 * Inductor's cpp wrapper, AOTInductor, apps) reaches through its PLT,
 * because the preload comes first in the global scope; also what
 * dlsym(RTLD_DEFAULT, "cuX") finds (interpose_dlsym.c returns NULL for it
 * while libcuda is not loaded).  Preload library only.
 *
 * Each forwarder is one load from `fwd` and an indirect tail jump: no lock,
 * no syscall, no allocation, and the caller's return address left in place
 * (the cupti* hand-over looks at it).  A row starts at its slow stub, which
 * decides once where the row goes and stores it:
 *   - the core's wrapper of the row, loading the core if this is the first
 *     thing that needs it (or the core's entry, guard/core_entry.c, while the
 *     driver lacks the function: it resolves per call);
 *   - cu* rows with mode=off, or any row when the core cannot be loaded
 *     (said once by tg_core_load): the real driver's function, so the
 *     program runs as without tunerguard (a function the driver lacks gives
 *     CUDA_ERROR_NOT_FOUND instead of a jump to NULL); for cupti* rows a
 *     stub that finds, per call, the definition the caller would have
 *     reached without us (two copies of libcupti may be loaded).
 * Racing first calls store the same value.  A first call made while this
 * thread is loading the core (from inside the load) goes to the real
 * function without storing anything. */
#include "loader/core_api.h"
#include "core/options.h"
#include "core/real_sym.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* the forwarders must be sibling calls even in a -O0 build */
#pragma GCC optimize("optimize-sibling-calls")
#endif

#define TG_EXPORT __attribute__((visibility("default")))

/* The rows' names, without relocations (read only on the slow path). */
static const char names[TG_FWD_N][40] = {
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) [TG_FN_##name] = #name,
#define TG_CUDA_GPA(name, params, args) [TG_FN_##name] = #name,
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
#define TG_X(name, ret, params, args) [TG_FWD_##name] = #name,
    TG_CUPTI_FORWARDS(TG_X)
#undef TG_X
};

/* Per row: its type and its slow stub. */
#define TG_ROW(name, ret, params, args)                                          \
    typedef ret (*fwd_pfn_##name) params;                                       \
    static ret slow_##name params;
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) TG_ROW(name, CUresult, params, args)
#define TG_CUDA_GPA(name, params, args) TG_ROW(name, CUresult, params, args)
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
#undef TG_ROW

/* Without the core, what a cu* row whose driver function is missing gives:
 * one function for every row, which reads none of its arguments (in the
 * x86-64 and AArch64 calling conventions a callee that ignores its
 * arguments may be called with any; one stub instead of a table of 29,
 * whose relocations ld.so would write in every process). */
static CUresult absent_cuda(void)
{
    return CUDA_ERROR_NOT_FOUND;
}
#define TG_X(name, ret, params, args)                                            \
    typedef ret (*fwd_pfn_##name) params;                                       \
    static ret slow_##name params;
TG_CUPTI_FORWARDS(TG_X)
#undef TG_X

/* The definition of row i the caller (return address ret) would reach
 * without tunerguard: in the caller's own scope, else the next one after
 * us; NULL if none. */
static void *cupti_next(const void *ret, unsigned i)
{
    Dl_info at;
    void *p = NULL;
    if (ret && dladdr((const char *)ret - 1, &at) && at.dli_fname && at.dli_fname[0]) {
        void *h = dlopen(at.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        if (h) {
            p = tg__real_dlsym()(h, names[i]);
            dlclose(h); /* NOLOAD took a reference; the object stays loaded */
        }
        if (tg_same_object(p, (const void *)cupti_next))
            p = NULL; /* our own forwarder */
    }
    if (!p)
        p = tg__real_dlsym()(RTLD_NEXT, names[i]);
    if (!p)
        (void)dlerror();
    return p;
}

#define TG_X(name, ret, params, args)                                            \
    static ret bare_##name params                                               \
    {                                                                           \
        fwd_pfn_##name f_ = (fwd_pfn_##name)cupti_next(__builtin_return_address(0), TG_FWD_##name); \
        return f_ ? f_ args : CUPTI_ERROR_NOT_INITIALIZED;                      \
    }
TG_CUPTI_FORWARDS(TG_X)
#undef TG_X

/* Where each row goes: its slow stub until decided.  In .data next to the
 * GOT: the relocation of these pointers writes the page ld.so writes anyway
 * (TG_STARTUP_DATA, core/startup.h). */
#define TG_ROW(name) [TG_FWD_##name] = (void *)slow_##name,
static void *_Atomic fwd[TG_FWD_N] __attribute__((section(".data.startup.tg"))) = {
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) TG_ROW(name)
#define TG_CUDA_GPA(name, params, args) TG_ROW(name)
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
#define TG_X(name, ret, params, args) TG_ROW(name)
    TG_CUPTI_FORWARDS(TG_X)
#undef TG_X
};
#undef TG_ROW

/* The real function of cu* row i, libcuda's; NULL if none.  A failed look-up's
 * dlerror() message is cleared (the caller's call succeeded as far as it
 * can tell). */
static void *real_of(unsigned i)
{
    void *p = NULL;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h) {
        p = tg__real_dlsym()(h, names[i]);
        dlclose(h); /* NOLOAD took a reference; libcuda stays loaded */
    }
    if (!p)
        (void)dlerror();
    return p;
}

/* Without the core: what a cupti* row goes to. */
static void *const bare[TG_FWD_N - TG_CUDA_NFN] = {
#define TG_X(name, ret, params, args) [TG_FWD_##name - TG_CUDA_NFN] = (void *)bare_##name,
    TG_CUPTI_FORWARDS(TG_X)
#undef TG_X
};

/* The slow stubs' one decision (see the top of the file). */
static __attribute__((noinline)) void *decide(unsigned i)
{
    /* cupti* rows take the core in mode=off too: its hand-over knows which
     * copy of libcupti each caller meant */
    int cupti = i >= TG_CUDA_NFN;
    const int saved_errno = errno; /* the program's, across the load and the look-ups */
    const struct tg_core_api *core = tg_opts.mode == TG_MODE_OFF && !cupti ? NULL : tg_core_load();
    if (core) {
        void *p = cupti ? core->fwd[i] : core->cuda_direct(i);
        errno = saved_errno;
        /* release, with the forwarders' load (TG_FWD_LOAD_ORDER): a thread
         * that jumps to the core's wrapper sees the driver pointer the
         * wrapper reads (on AArch64 the jump alone orders nothing) */
        atomic_store_explicit(&fwd[i], p, memory_order_release);
        return p;
    }
    void *p = cupti ? bare[i - TG_CUDA_NFN] : real_of(i);
    errno = saved_errno;
    if (!p)
        p = (void *)absent_cuda;
    if (tg_opts.mode == TG_MODE_OFF || tg_core_failed())
        atomic_store_explicit(&fwd[i], p, memory_order_relaxed);
    return p;
}

/* The forwarders' load of their row.  x86-64 orders loads with loads (TSO),
 * and an acquire load there stops gcc from making the jump a tail call when
 * arguments are on the stack (cuLaunchKernel copied its five); elsewhere
 * acquire, the other half of decide's release store. */
#ifdef __x86_64__
#define TG_FWD_LOAD_ORDER memory_order_relaxed
#else
#define TG_FWD_LOAD_ORDER memory_order_acquire
#endif

#define TG_ROW(name, ret, params, args)                                          \
    static ret slow_##name params                                               \
    {                                                                           \
        return ((fwd_pfn_##name)decide(TG_FWD_##name)) args;                    \
    }                                                                           \
    TG_EXPORT ret name params                                                   \
    {                                                                           \
        return ((fwd_pfn_##name)atomic_load_explicit(&fwd[TG_FWD_##name],       \
                                                     TG_FWD_LOAD_ORDER)) args;  \
    }
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) TG_ROW(name, CUresult, params, args)
#define TG_CUDA_GPA(name, params, args) TG_ROW(name, CUresult, params, args)
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
#define TG_X(name, ret, params, args) TG_ROW(name, ret, params, args)
TG_CUPTI_FORWARDS(TG_X)
#undef TG_X
#undef TG_ROW

/* Test and tooling query: calls tunerguard recorded for one wrapped variant
 * ("cuLaunchKernel_ptsz"), all threads, since start or fork; ~0ULL for a name
 * that is not a wrapped variant.  Exported (needs its line in
 * loader/tunerguard.map) so that preload tests can compare with what the driver
 * ran: dlsym(RTLD_DEFAULT, "tunerguard_cuda_count").  Never loads the core:
 * without it nothing was recorded.  Any thread; no lock. */
TG_EXPORT unsigned long long tunerguard_cuda_count(const char *variant)
{
    const struct tg_core_api *core = tg_core_loaded();
    if (core)
        return core->cuda_count(variant);
    for (unsigned i = 0; variant && i < TG_CUDA_NFN; i++)
        if (strcmp(names[i], variant) == 0)
            return 0;
    return ~0ULL;
}
