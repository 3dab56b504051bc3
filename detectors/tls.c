/* The detectors' thread-locals.  In the loader (libtunerguard.so), which the
 * dynamic loader maps at start-up, so initial-exec TLS always has its static
 * block there; the core library, dlopen'd late, has none of its own
 * (loader/core_api.h).  Zero until a detector writes them. */
#include "detectors/interference.h"

__thread struct tg_itf_thread tg_itf_self;
