/* The CUDA side's thread-locals, defined in cuda/tls.c (in the loader,
 * libtunerguard.so: the core library, dlopen'd late, has no static TLS block
 * of its own, loader/core_api.h).  The hooks' per-device cache is declared
 * with its type in cuda/cuda_record.h.  Each is read and written by its own
 * thread only; zero until a hook writes it. */
#ifndef TG_CUDA_TLS_H
#define TG_CUDA_TLS_H

#include <stdint.h>

/* cupti=1: when the thread's current benchmark began (tg_mono_ns; 0:
 * none).  cuda/cuda_stress.c. */
extern __thread uint64_t tg__stress_bench_t0;
/* cupti=1: when the thread's current tuner session launched first
 * (0: none yet).  cuda/cupti_backend.c. */
extern __thread uint64_t tg__cupti_sess_t0;

#endif
