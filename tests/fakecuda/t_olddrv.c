#define _GNU_SOURCE
/* An older driver (tests/fakecuda/old/libcuda.so.1, built with
 * -DFAKECUDA_OLD_DRIVER: no cuLaunchKernelEx*, cuCtxSynchronize_v2,
 * cuLibrary*, cuGetProcAddress_v2; version 11040) with tunerguard preloaded,
 * or not: every way of reaching a function either works (present ones: PLT,
 * dlsym on the libcuda handle, cuGetProcAddress) or gives what the driver
 * itself gives for a missing one (NULL, or CUDA_ERROR_NOT_FOUND from a
 * definition that cannot call anything), from several threads at once.
 * Linked against the old fake, so the PLT is used only for present
 * functions.  Output on stdout only: the ctest checks stderr (tunerguard's
 * lines) separately (check_olddrv.sh). */
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags);

#define CHECK(c)                                                                    \
    do {                                                                            \
        if (!(c)) {                                                                 \
            printf("%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);            \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*launchex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*ctxsync2_fn)(CUcontext);
typedef CUresult (*libload_fn)(CUlibrary *, const void *, CUjit_option *, void **, unsigned,
                               CUlibraryOption *, void **, unsigned);
typedef CUresult (*libkern_fn)(CUkernel *, CUlibrary, const char *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*void_fn)(void);

static const char *const missing[] = {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
                                      "cuCtxSynchronize_v2", "cuLibraryLoadData",
                                      "cuLibraryGetKernel", "cuGetProcAddress_v2"};
#define NMISSING (sizeof missing / sizeof missing[0])

static void *h;
static CUfunction fn;

/* A missing entry point reached through a scope that may hold tunerguard's
 * own exported definition (RTLD_DEFAULT): NULL, as without tunerguard, or a
 * definition that returns CUDA_ERROR_NOT_FOUND and calls nothing. */
static void call_missing(const char *name, void *p)
{
    if (!p)
        return;
    CUresult rc = CUDA_SUCCESS;
    if (!strncmp(name, "cuLaunchKernelEx", 16)) {
        CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof cfg);
        rc = ((launchex_fn)p)(&cfg, fn, NULL, NULL);
    } else if (!strcmp(name, "cuCtxSynchronize_v2")) {
        rc = ((ctxsync2_fn)p)(NULL);
    } else if (!strcmp(name, "cuLibraryLoadData")) {
        CUlibrary lib;
        rc = ((libload_fn)p)(&lib, "m", NULL, NULL, 0, NULL, NULL, 0);
    } else if (!strcmp(name, "cuLibraryGetKernel")) {
        CUkernel k;
        rc = ((libkern_fn)p)(&k, NULL, "k");
    } else if (!strcmp(name, "cuGetProcAddress_v2")) {
        void *q = (void *)1;
        CUdriverProcAddressQueryResult st;
        rc = ((gpa2_fn)p)("cuLaunchKernel", &q, 11040, 0, &st);
    }
    if (rc != CUDA_ERROR_NOT_FOUND) {
        printf("%s via RTLD_DEFAULT: rc %d, want CUDA_ERROR_NOT_FOUND (500)\n", name, (int)rc);
        exit(1);
    }
}

static void *round_(void *arg)
{
    (void)arg;
    /* present, by PLT */
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS);
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
    /* present, by dlsym on the handle */
    launch_fn l = (launch_fn)dlsym(h, "cuLaunchKernel");
    CHECK(l && l(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS);
    void_fn cs = (void_fn)dlsym(h, "cuCtxSynchronize");
    CHECK(cs && cs() == CUDA_SUCCESS);
    /* present, by cuGetProcAddress (the only ABI this driver has) */
    void *p = NULL;
    CHECK(cuGetProcAddress("cuCtxSynchronize", &p, 11040, 0) == CUDA_SUCCESS && p);
    CHECK(((void_fn)p)() == CUDA_SUCCESS);
    gpa1_fn g = NULL;
    CHECK(cuGetProcAddress("cuGetProcAddress", (void **)&g, 11040, 0) == CUDA_SUCCESS && g);
    p = NULL;
    CHECK(g("cuLaunchKernel", &p, 11040, 0) == CUDA_SUCCESS && p);
    CHECK(((launch_fn)p)(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS);
    /* asking for a version newer than the driver: its error, untouched */
    p = (void *)1;
    CHECK(cuGetProcAddress("cuCtxSynchronize", &p, 13000, 0) == CUDA_ERROR_INVALID_VALUE);

    for (size_t i = 0; i < NMISSING; i++) {
        const char *name = missing[i];
        CHECK(dlsym(h, name) == NULL);                       /* like the driver */
        call_missing(name, dlsym(RTLD_DEFAULT, name));
        /* cuGetProcAddress of a missing base name: no pointer */
        char base[64];
        snprintf(base, sizeof base, "%s", name);
        char *suffix = strstr(base, "_v2");
        if (!suffix)
            suffix = strstr(base, "_ptsz");
        if (suffix)
            *suffix = '\0';
        p = (void *)1;
        CUresult rc = cuGetProcAddress(base, &p, 11040,
                                       strstr(name, "_ptsz") ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0);
        CHECK(rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_FOUND);
        if (!strcmp(base, "cuCtxSynchronize") || !strcmp(base, "cuGetProcAddress"))
            CHECK(p != NULL && p != fakecuda_addr(name));    /* the old variant, not _v2 */
        else
            CHECK(p == NULL);
    }
    return NULL;
}

int main(void)
{
    h = dlopen("libcuda.so.1", RTLD_NOW);
    CHECK(h);
    int ver = 0;
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CHECK(cuDriverGetVersion(&ver) == CUDA_SUCCESS && ver == 11040);
    for (size_t i = 0; i < NMISSING; i++)
        CHECK(fakecuda_addr(missing[i]) == NULL);            /* really the old driver */
    CUmodule mod;
    CHECK(cuModuleLoadData(&mod, "old_module") == CUDA_SUCCESS);
    CHECK(cuModuleGetFunction(&fn, mod, "old_kernel") == CUDA_SUCCESS);

    round_(NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, round_, NULL) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);

    /* with tunerguard: every call of a present variant was seen, once */
    unsigned long long (*tg_count)(const char *) =
        (unsigned long long (*)(const char *))dlsym(RTLD_DEFAULT, "tunerguard_cuda_count");
    static const char *const seen[] = {"cuLaunchKernel", "cuCtxSynchronize", "cuModuleGetFunction",
                                       "cuGetProcAddress"};
    for (size_t i = 0; tg_count && i < sizeof seen / sizeof seen[0]; i++) {
        unsigned long long rec = tg_count(seen[i]), ran = fakecuda_count(seen[i]);
        if (rec != ran) {
            printf("%s: tunerguard recorded %llu, the driver ran %llu\n", seen[i], rec, ran);
            return 1;
        }
    }
    CHECK(fakecuda_count("cuLaunchKernel") == 15);
    printf("ok (%s)\n", tg_count ? "tunerguard preloaded" : "no tunerguard");
    return 0;
}
