/* Shared set-up of the interference / stress unit tests: the stand-in libcuda
 * dlopen'ed by path, wrapped entry points, helper threads on fake devices.
 * FAKECUDA_LIB comes from tests/fakecuda/CMakeLists.txt when it names this
 * test; otherwise the fake is found next to the test binary
 * (build/tests/fakecuda/libcuda.so.1, built by the same build). */
#ifndef TG_TEST_FAKECUDA_ENV_H
#define TG_TEST_FAKECUDA_ENV_H

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda/cuda_hooks.h"
#include "cuda/cuda_stress.h"
#include "core/options.h"
#include "core/thread_state.h"

static void *fk_lib;
static unsigned long long (*fk_count)(const char *);
static void *(*fk_ctx)(int);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
static launch_fn w_launch;            /* wrapped cuLaunchKernel */
static CUresult (*w_sync)(void);      /* wrapped cuCtxSynchronize */
static CUresult (*w_query)(CUstream); /* wrapped cuStreamQuery */
static CUresult (*r_setcur)(CUcontext);

static void *fk_real(const char *name)
{
    void *p = dlsym(fk_lib, name);
    cr_assert(p, "the fake lacks %s", name);
    return p;
}

static void fk_open(void)
{
    char path[PATH_MAX];
#ifdef FAKECUDA_LIB
    snprintf(path, sizeof path, "%s", FAKECUDA_LIB);
#else
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(n > 0);
    exe[n] = '\0';
    snprintf(path, sizeof path, "%s/fakecuda/libcuda.so.1", dirname(exe));
#endif
    tg_opts.mode = TG_MODE_DETECT;
    fk_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert(fk_lib, "dlopen %s: %s", path, dlerror());
    fk_count = (unsigned long long (*)(const char *))fk_real("fakecuda_count");
    fk_ctx = (void *(*)(int))fk_real("fakecuda_ctx");
    w_launch = (launch_fn)tg__cuda_wrap(fk_real("cuLaunchKernel"));
    w_sync = (CUresult(*)(void))tg__cuda_wrap(fk_real("cuCtxSynchronize"));
    w_query = (CUresult(*)(CUstream))tg__cuda_wrap(fk_real("cuStreamQuery"));
    r_setcur = (CUresult(*)(CUcontext))fk_real("cuCtxSetCurrent");
    cr_assert(tg_cuda_active());
    cr_assert_neq((void *)w_launch, fk_real("cuLaunchKernel"), "launch not wrapped");
}

/* A kernel handle named `name`, from the fake (unwrapped calls: not recorded). */
static CUfunction fk_kernel(const char *name)
{
    CUresult (*load)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))fk_real("cuModuleLoadData");
    CUresult (*get)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))fk_real("cuModuleGetFunction");
    CUmodule m = NULL;
    CUfunction f = NULL;
    cr_assert_eq(load(&m, "image"), CUDA_SUCCESS);
    cr_assert_eq(get(&f, m, name), CUDA_SUCCESS);
    return f;
}

static void fk_use_device(int dev)
{
    cr_assert_eq(r_setcur((CUcontext)fk_ctx(dev)), CUDA_SUCCESS);
}

static CUresult fk_launch(CUfunction f)
{
    return w_launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

/* What a guarded tuner call does to the thread record (guard/session.c):
 * enter an outermost session, leave it. */
static void fk_session_enter(void)
{
    struct tg_thread *t = tg__self();
    t->session_launches = 0;
    t->session_syncs = 0;
    t->session_multi = 0;
    t->held_slot[0] = 0xff; /* in no tuner's slots (guard/session.c sets both) */
    t->nheld = 1;
    t->depth = 1;
}
/* Stores the interference report's seq (0: none) when seq is not NULL. */
static void fk_session_leave(uint64_t *seq)
{
    struct tg_thread *t = tg__self();
    t->nheld = 0;
    t->depth = 0;
    uint64_t s = tg_tuning_session_end(t, NULL);
    if (seq)
        *seq = s;
}

static __attribute__((unused)) pid_t fk_gettid(void)
{
    return tg__self()->tid;
}

/* Wait (bounded, by condition, never by time alone) until pred() holds. */
static __attribute__((unused)) int fk_until(int (*pred)(void))
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (pred())
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 20)
            return 0;
        sched_yield();
    }
}

#endif
