/* Native stack capture: libunwind's unw_backtrace loaded on demand, glibc's
 * backtrace() when libunwind.so.8 is absent.  Symbolization is in
 * reports/symbolize.c.
 *
 * Why dlopen: the static libunwind.a is not PIC, so it cannot go into our
 * .so, and linking the shared one would add a runtime dependency (DESIGN.md:
 * libc/libdl/libpthread only).  RTLD_LOCAL keeps libunwind's weak
 * `backtrace` alias from replacing glibc's for the host program. */
#include "reports/native_stack.h"
#include "core/real_sym.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>

typedef int (*tg__bt_fn)(void **, int);

/* Set once by tg_native_init() (after the warm-up), read by capture. */
static _Atomic(tg__bt_fn) tg__bt;
static pthread_once_t tg__native_once = PTHREAD_ONCE_INIT;

#define TG_CAPTURE_MAX 128         /* frames one capture may walk, skip included */

static void native_init_once(void)
{
    tg__bt_fn fn = NULL;
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h)
        fn = (tg__bt_fn)tg_real_sym(h, "unw_backtrace");
    if (!fn)
        fn = backtrace;            /* glibc's: loads libgcc_s on first use */
    /* Warm-up: the first unwind loads libgcc_s / fills libunwind's caches and
     * may allocate; do it here, in a normal context, not in a hook or a
     * signal handler. */
    void *tmp[8];
    fn(tmp, 8);
    atomic_store_explicit(&tg__bt, fn, memory_order_release);
}

void tg_native_init(void)
{
    pthread_once(&tg__native_once, native_init_once);
}

/* noinline: the frame count to skip (this function's own) must be exact. */
__attribute__((noinline)) int tg_native_capture(void **frames, int max, int skip)
{
    tg__bt_fn fn = atomic_load_explicit(&tg__bt, memory_order_acquire);
    if (!fn || !frames || max <= 0)
        return 0;
    if (skip < 0)
        skip = 0;
    void *tmp[TG_CAPTURE_MAX];
    int want = max + skip + 1;     /* +1: tg_native_capture itself */
    if (want > TG_CAPTURE_MAX)
        want = TG_CAPTURE_MAX;
    int n = fn(tmp, want);
    int first = skip + 1;
    int k = 0;
    for (int i = first; i < n && k < max; i++)
        frames[k++] = tmp[i];
    return k;
}
