/* The CUDA side's thread-locals (the hooks' recording state, the stress and
 * CUPTI session clocks).  In the loader (libtunerguard.so), which the
 * dynamic loader maps at start-up, so initial-exec TLS always has its static
 * block there; the core library, dlopen'd late, has none of its own
 * (loader/core_api.h).  Zero until a hook writes them. */
#include "cuda/cuda_record.h"
#include "cuda/tls.h"

#include <stdint.h>

__thread struct tg__devcache_entry tg__devcache[TG_CUDA_DEVCACHE];
__thread uint64_t tg__stress_bench_t0; /* cuda/cuda_stress.c */
__thread uint64_t tg__cupti_sess_t0;   /* cuda/cupti_backend.c */
