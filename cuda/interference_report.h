/* The tuning-under-load report (TG_REPORT_INTERFERENCE), built from what
 * the CUDA slow paths (cuda/cuda_stress.c) found at the end of a benchmark. */
#ifndef TG_INTERFERENCE_REPORT_H
#define TG_INTERFERENCE_REPORT_H

#include "core/thread_state.h"
#include "detectors/gpu_overlap.h"
#include "detectors/interference.h"

#include <stdint.h>

/* Thread t's benchmark on res->dev ended with foreign launches (res) or,
 * cupti=1, a skewed GPU verdict (gv; NULL: no GPU evidence).  Fill and emit
 * the report about tuner inst (a PyObject *, NULL: no Python facts).  Returns
 * its seq, 0 when none was written (suppressed).  GIL held when inst is
 * non-NULL; without it, serialized with other reporters by a mutex. */
uint64_t tg__report_interference(struct tg_thread *t, void *inst, const struct tg_itf_result *res,
                                 const struct tg_gpu_verdict *gv);

#endif
