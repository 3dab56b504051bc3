/* The trace's thread-locals (reports/trace.c).  In the loader
 * (libtunerguard.so), which the dynamic loader maps at start-up, so
 * initial-exec TLS always has its static block there; the core library,
 * dlopen'd late, has none of its own (loader/core_api.h).  Zero until the
 * trace writes them. */
#include "reports/tls.h"

#include <stdint.h>

__thread struct tg__trace_ring *tg__my_ring;
__thread int tg__no_ring;
__thread uint64_t tg__sess_bits;
__thread int tg__sess_depth;
__thread int tg__self_named;
