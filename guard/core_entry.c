/* The core library's one entry point (loader/core_api.h): the table the loader
 * jumps through.  Core only.
 *
 * The cu* rows: what the loader's exported cu* definitions reach (a caller
 * linked against libcuda, or dlsym(RTLD_DEFAULT, "cuX") once libcuda is
 * loaded).  Each goes to the wrapper of the same variant; the real pointer
 * is resolved lazily from the loaded libcuda.so.1 (dlopen RTLD_NOLOAD: if a
 * PLT call reached us, libcuda is loaded); a variant the driver lacks
 * returns CUDA_ERROR_NOT_FOUND (said once at verbosity=1) instead of calling
 * NULL. */
#include "loader/core_api.h"
#include "cuda/cuda_hooks.h"
#include "cuda/cupti_backend.h"
#include "cuda/listener.h"
#include "guard/guard_internal.h"
#include "guard/lifecycle.h"
#include "loader/py_arm_internal.h"
#include "reports/suppress_load.h"
#include "tg_build_id.h"

#include <string.h>

/* Slow path, once per row: resolve, or say the driver lacks it. */
static __attribute__((noinline)) int plt_resolve(unsigned fn)
{
    if (tg__cuda_init_loaded() && tg__cuda_real(fn))
        return 1;
    tg__cuda_missing(fn);
    return 0;
}

#define TG_CUDA_ENTRY(name, params, args)                                        \
    static CUresult entry_##name params                                         \
    {                                                                           \
        if (__builtin_expect(!tg__cuda_real(TG_FN_##name), 0) &&                \
            !plt_resolve(TG_FN_##name))                                         \
            return CUDA_ERROR_NOT_FOUND;                                        \
        return tg__cuda_w_##name args;                                          \
    }
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) TG_CUDA_ENTRY(name, params, args)
#define TG_CUDA_GPA(name, params, args) TG_CUDA_ENTRY(name, params, args)
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA

/* The hand-over to another CUPTI client (cuda/cupti_backend.c). */
#define TG_X(name, ret, params, args) ret CUPTIAPI tg__cupti_fwd_##name params;
TG_CUPTI_FORWARDS(TG_X)
#undef TG_X

/* Calls recorded for one wrapped variant ("cuLaunchKernel_ptsz"), all
 * threads, since start or fork; ~0ULL for a name that is not a wrapped
 * variant (the exported tunerguard_cuda_count).  Any thread; no lock. */
static unsigned long long cuda_count(const char *variant)
{
    int i = tg_cuda_fn_index(variant);
    return i < 0 ? ~0ULL : tg_cuda_count((unsigned)i);
}

static const struct tg_core_api api;

static void *cuda_direct(unsigned fn)
{
    if (fn < TG_CUDA_NFN && tg__cuda_init_loaded() && tg__cuda_real(fn))
        return tg__cuda_wrapper(fn);
    return fn < TG_CUDA_NFN ? api.fwd[fn] : NULL;
}

static const struct tg_core_api api = {
    .fwd = {
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) [TG_FN_##name] = (void *)entry_##name,
#define TG_CUDA_GPA(name, params, args) [TG_FN_##name] = (void *)entry_##name,
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
#define TG_X(name, ret, params, args) [TG_FWD_##name] = (void *)tg__cupti_fwd_##name,
        TG_CUPTI_FORWARDS(TG_X)
#undef TG_X
    },
    .cuda_direct = cuda_direct,
    .cuda_count = cuda_count,
    .activate = tg__core_activate,
    .fini = tg__core_fini,
    .arm_guard_module = tg__arm_guard_module,
    .arm_find_target_spec = tg__arm_find_target_spec,
    .arm_exit_summary = tg__arm_exit_summary_core,
    .arm_finalizing = tg__arm_finalizing_core,
    .cupti_maybe_start = tg_cupti_maybe_start,
    .cuda_wrap = tg__cuda_wrap,
    .cuda_init_loaded = tg__cuda_init_loaded,
    .supp_load = tg_supp_load,
};

/* What the guard side hears from the CUDA hooks (cuda/listener.h). */
static const struct tg_cuda_listener listener = {
    .lazy_evidence = tg__lazy_evidence,
    .arm_fork = tg_lifecycle_arm_fork,
};

__attribute__((visibility("default"))) const struct tg_core_api *tg_core_entry(const char *build_id)
{
    if (!build_id || strcmp(build_id, TG_BUILD_ID) != 0)
        return NULL;
    tg_cuda_listen(&listener); /* before the loader publishes the table: before any hook of the core runs */
    return &api;
}
