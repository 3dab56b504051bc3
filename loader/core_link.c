/* The loader's side of the core: loading it once, and the few calls into it
 * that the loader makes on its own (loader/core_api.h).  In the loader
 * (libtunerguard.so) and in the static archive the unit tests link. */
#include "loader/core_api.h"
#include "core/log.h"
#include "core/options.h"
#include "core/process.h"
#include "core/startup.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 0 not tried, 1 loaded, 2 failed (final).  Written under `lock`; read with
 * acquire loads (the table pointer is published before the state). */
enum { CORE_NONE, CORE_READY, CORE_FAILED };
static _Atomic int state;
static const struct tg_core_api *_Atomic table;
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

/* The load's lock: a futex word, 0 free, 1 taken, 2 taken with waiters
 * (one load a process; pthread_mutex would be two more imports in every
 * process's symbol tables, docs/benchmarks.md "Start-up cost"). */
static _Atomic uint32_t lock;

static void load_lock(void)
{
    uint32_t c = 0;
    if (atomic_compare_exchange_strong(&lock, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(&lock, 2);
    while (c != 0) {
        syscall(SYS_futex, &lock, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange(&lock, 2);
    }
}

static void load_unlock(void)
{
    if (atomic_exchange(&lock, 0) == 2)
        syscall(SYS_futex, &lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* fork(2) while another thread loads the core would leave the child with
 * `lock` taken by a thread it does not have (and ld.so's state half way
 * through that thread's dlopen): its first call that needs the core would
 * wait forever.  So fork waits for a load in progress: the prepare handler
 * takes `lock`, the parent and the child let it go.  Not on the loading
 * thread itself (a fork from inside the load, which holds `lock`).
 * Registered by the first load, before `lock` is taken (glibc runs the
 * handlers under its fork lock, which registering takes too), and before
 * any load takes it (guard_fork_once). */
static int fork_locked;
/* Idempotent: a child that inherited a registration half done registers the
 * guard again (guard_fork_once), and then glibc runs it twice a fork. */
static void fork_prepare(void)
{
    if (!loading && !fork_locked) {
        load_lock();
        fork_locked = 1;
    }
}
static void fork_done(void)
{
    if (fork_locked) {
        fork_locked = 0;
        load_unlock();
    }
}
static void fork_child(void)
{
    if (!loading)
        tg__core_bind_atfork_child(); /* fds of binds by threads the child does not have */
    fork_done();
}
/* pthread_atfork is a stub of libc_nonshared.a passing the object's
 * __dso_handle, which the loader (linked without start files) lacks; the
 * handle only serves to drop the handlers when the object is unloaded,
 * and the preloaded loader never is. */
#ifdef __GLIBC__
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);
#define register_fork_guard() __register_atfork(fork_prepare, fork_done, fork_child, NULL)
#else
#define register_fork_guard() pthread_atfork(fork_prepare, fork_done, fork_child)
#endif

/* The fork guard, registered once by the first load: 0 not yet, -1
 * registered, else the pid of the process a thread of which is registering
 * it.  A load waits for -1 before it takes `lock`, so no fork can find
 * `lock` taken without its prepare handler in place.  A fork while another
 * thread registers leaves the child a pid that is not its own, and nobody to
 * finish: the child's first load registers it again (glibc serialises
 * registering with fork, so the child has the handlers once or not at all;
 * twice is harmless, above). */
static void guard_fork_once(void)
{
    static _Atomic int guarded;
    int g = atomic_load(&guarded);
    if (g == -1)
        return;
    const int me = (int)syscall(SYS_getpid); /* the slow path of the first load only */
    for (;;) {
        if (g == 0 || (g != -1 && g != me)) {
            if (atomic_compare_exchange_strong(&guarded, &g, me)) {
                register_fork_guard();
                atomic_store(&guarded, -1);
                return;
            }
            continue; /* g reloaded by the failed exchange */
        }
        if (g == -1)
            return;
        sched_yield(); /* another thread of this process is registering it: one call long */
        g = atomic_load(&guarded);
    }
}

/* The core is bound (dlopen) without `lock`: a thread inside another
 * dlopen holds ld.so's lock while that library's constructors run, and one
 * that calls the driver (or forks) would then wait for `lock` while this
 * thread, holding it, waited in dlopen for ld.so's.  ld.so serialises the
 * binds itself, and a second dlopen of the core (NODELETE) only counts a
 * reference.  `lock` covers making the core ready and publishing it, once. */
static __attribute__((noinline)) const struct tg_core_api *load_slow(void)
{
    if (loading)
        return NULL; /* re-entered from our own load: pass through this once */
    if (tg__copy_inert(NULL)) { /* another copy serves: its core, not ours (final, nothing said) */
        atomic_store_explicit(&state, CORE_FAILED, memory_order_release);
        return NULL;
    }
    const int saved_errno = errno; /* the caller's: a CUDA call or an import sets none of ours */
    loading = 1; /* before the guard: a signal handler of this thread calling the driver while it
                    registers passes through instead of waiting for itself */
    guard_fork_once();
    char err[600] = "";
    const struct tg_core_api *t = tg__core_bind(err, sizeof err);
    load_lock();
    if (atomic_load_explicit(&state, memory_order_relaxed) == CORE_NONE) {
        if (t) {
            tg__core_ready(t);
            atomic_store_explicit(&table, t, memory_order_release);
            atomic_store_explicit(&state, CORE_READY, memory_order_release);
        } else {
            atomic_store_explicit(&state, CORE_FAILED, memory_order_release);
            tg__warn("%s; nothing is guarded or recorded, CUDA calls pass straight to the driver", err);
        }
    }
    load_unlock();
    loading = 0; /* after the unlock: a signal handler of this thread in between must not wait for it */
    errno = saved_errno;
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

/* ---- lifecycle, from the loader (loader/core_api.h) ------------------------- */

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
    if (!h) {
        (void)dlerror(); /* a probe: no error left pending for the program */
        return 0;
    }
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
