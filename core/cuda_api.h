/* The CUDA driver entry points tunerguard intercepts: the rows of
 * core/cuda_api.inc, numbered.  What every layer that names a driver call
 * uses: the loader's exported definitions and its table of the core
 * (loader/), the wrappers and their records (cuda/), the report writers.
 * Types only; nothing here is called. */
#ifndef TG_CUDA_API_H
#define TG_CUDA_API_H

#include <cuda.h>
#undef cuGetProcAddress /* cuda.h maps it to _v2; both ABIs are rows */

/* Row indices of core/cuda_api.inc: TG_FN_cuLaunchKernel, ... */
enum tg_cuda_fn {
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) TG_FN_##name,
#define TG_CUDA_GPA(name, params, args) TG_FN_##name,
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
    TG_CUDA_NFN
};

#endif
