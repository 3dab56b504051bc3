/* Exported cu* definitions: what a caller linked against libcuda (-lcuda:
 * Triton's driver.c helpers, Inductor's cpp wrapper, AOTInductor, apps)
 * reaches through its PLT, because the preload comes first in the global
 * scope.  Also what dlsym(RTLD_DEFAULT, "cuX") finds (interpose_dlsym.c
 * returns NULL for it while libcuda is not loaded).
 *
 * Each forwards to the wrapper of the same variant.  The real pointer is
 * resolved lazily from the loaded libcuda.so.1 (dlopen RTLD_NOLOAD: if a PLT
 * call reached us, libcuda is loaded); a variant the driver lacks returns
 * CUDA_ERROR_NOT_FOUND (said once at verbosity=1) instead of calling NULL.
 * Preload library only (not in the static core). */
#include "shim/cuda_hooks.h"

#define TG_EXPORT __attribute__((visibility("default")))

/* Slow path, once per row: resolve, or say the driver lacks it. */
static __attribute__((noinline)) int tg__cuda_plt_resolve(unsigned fn)
{
    if (tg__cuda_init_loaded() && tg__cuda_real(fn))
        return 1;
    tg__cuda_missing(fn);
    return 0;
}

#define TG_CUDA_EXPORT(name, params, args)                                         \
    TG_EXPORT CUresult name params                                                \
    {                                                                             \
        if (__builtin_expect(!tg__cuda_real(TG_FN_##name), 0) &&                  \
            !tg__cuda_plt_resolve(TG_FN_##name))                                  \
            return CUDA_ERROR_NOT_FOUND;                                          \
        return tg__cuda_w_##name args;                                            \
    }
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) TG_CUDA_EXPORT(name, params, args)
#define TG_CUDA_GPA(name, params, args) TG_CUDA_EXPORT(name, params, args)
#include "shim/cuda_hooks.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA

/* Test and tooling query: calls tunerguard recorded for one wrapped variant
 * ("cuLaunchKernel_ptsz"), all threads, since start or fork; ~0ULL for a name
 * that is not a wrapped variant.  Exported (needs its line in
 * shim/tunerguard.map) so that preload tests can compare with what the driver
 * ran: dlsym(RTLD_DEFAULT, "tunerguard_cuda_count").  Any thread; no lock. */
TG_EXPORT unsigned long long tunerguard_cuda_count(const char *variant)
{
    int i = tg_cuda_fn_index(variant);
    return i < 0 ? ~0ULL : tg_cuda_count((unsigned)i);
}
