/* The loader's side of the core: loading it once, and the few calls into it
 * that the loader makes on its own (shim/core_api.h).  In the loader
 * (libtunerguard.so) and in the static archive the unit tests link. */
#include "shim/core_api.h"
#include "core/log.h"
#include "core/options.h"
#include "core/process.h"
#include "core/startup.h"
#include "shim/lifecycle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

/* 0 not tried, 1 loaded, 2 failed (final).  Written under `lock`; read with
 * acquire loads (the table pointer is published before the state). */
enum { CORE_NONE, CORE_READY, CORE_FAILED };
static _Atomic int state;
static const struct tg_core_api *_Atomic table;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* This thread is inside the load (dlopen, the core's relocation, its
 * entry): a call that comes back here must not wait for itself. */
static __thread int loading;

const struct tg_core_api *tg_core_loaded(void)
{
    return atomic_load_explicit(&table, memory_order_acquire);
}

int tg_core_failed(void)
{
    return atomic_load_explicit(&state, memory_order_acquire) == CORE_FAILED;
}

static __attribute__((noinline)) const struct tg_core_api *load_slow(void)
{
    if (loading)
        return NULL; /* re-entered from our own load: pass through this once */
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&state, memory_order_relaxed) == CORE_NONE) {
        char err[600] = "";
        loading = 1;
        const struct tg_core_api *t = tg__core_bind(err, sizeof err);
        loading = 0;
        if (t) {
            atomic_store_explicit(&table, t, memory_order_release);
            atomic_store_explicit(&state, CORE_READY, memory_order_release);
        } else {
            atomic_store_explicit(&state, CORE_FAILED, memory_order_release);
            tg__warn("%s; nothing is guarded or recorded, CUDA calls pass straight to the driver", err);
        }
    }
    pthread_mutex_unlock(&lock);
    return atomic_load_explicit(&table, memory_order_acquire);
}

const struct tg_core_api *tg_core_load(void)
{
    const struct tg_core_api *t = atomic_load_explicit(&table, memory_order_acquire);
    if (__builtin_expect(t != NULL, 1))
        return t;
    if (atomic_load_explicit(&state, memory_order_acquire) == CORE_FAILED)
        return NULL;
    return load_slow();
}

/* ---- lifecycle, from the loader (shim/lifecycle.h) ------------------------- */

void tg_activate(void)
{
    const struct tg_core_api *core = tg_core_load();
    if (core)
        core->activate();
}

int tg_core_needed_at_start(void)
{
    return tg_opts.trace != 0;
}

/* ---- CUDA and CUPTI, from the loader --------------------------------------- */

int tg__cuda_lib_loaded(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    dlclose(h); /* drops only the reference NOLOAD took */
    return 1;
}

int tg_core_cupti_maybe_start(int check_loaded)
{
    if (!tg_opts.cupti || tg_opts.mode == TG_MODE_OFF)
        return 0;
    const struct tg_core_api *core = tg_core_loaded();
    if (!core) {
        /* not loaded: no CUDA pointer was ever wrapped (tg_cuda_active is 0) */
        if (!check_loaded || !tg__cuda_lib_loaded())
            return 0;
        if (!(core = tg_core_load()))
            return 0;
    }
    return core->cupti_maybe_start(check_loaded);
}
