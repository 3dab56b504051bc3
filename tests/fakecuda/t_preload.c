#define _GNU_SOURCE
/* Preload test against the stand-in driver: run with
 * LD_PRELOAD=libtunerguard.so and linked against the fake (-lcuda).
 *   t_preload paths    the three ways of reaching a driver function
 *   t_preload threads  many threads, all three ways at once
 *   t_preload fork     the child starts with zero counts
 * Every call the fake logged must have been recorded by tunerguard exactly
 * once (tunerguard_cuda_count, when exported; else that comparison is
 * skipped with a note, the rest still asserts). */
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#undef cuGetProcAddress

#define CHECK(c)                                                                    \
    do {                                                                            \
        if (!(c)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);   \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*launchex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*stream_fn)(CUstream);

static const char *const wrapped_names[] = {
    "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
    "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch",
    "cuGraphLaunch_ptsz", "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuCtxSynchronize",
    "cuCtxSynchronize_v2", "cuEventSynchronize", "cuStreamWaitEvent", "cuStreamWaitEvent_ptsz",
    "cuStreamQuery", "cuStreamQuery_ptsz", "cuEventQuery", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds",
    "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz", "cuModuleLoadData", "cuModuleGetFunction",
    "cuLibraryLoadData", "cuLibraryGetKernel", "cuStreamDestroy_v2", "cuGetProcAddress",
    "cuGetProcAddress_v2",
};
#define NWRAPPED (sizeof wrapped_names / sizeof wrapped_names[0])

static unsigned long long (*tg_count)(const char *);

/* recorded == executed, for every wrapped variant */
static void check_counts(const char *when)
{
    if (!tg_count) {
        printf("note: tunerguard_cuda_count not exported; recorded==executed not compared (%s)\n", when);
        return;
    }
    for (size_t i = 0; i < NWRAPPED; i++) {
        unsigned long long rec = tg_count(wrapped_names[i]), ran = fakecuda_count(wrapped_names[i]);
        if (rec != ran) {
            fprintf(stderr, "%s: %s recorded %llu, driver ran %llu\n", when, wrapped_names[i], rec, ran);
            exit(1);
        }
    }
}

static void *h;        /* dlopen("libcuda.so.1") */
static gpa2_fn gpa;    /* cudart-style: the pointer gpa("cuGetProcAddress") returned */

static void *lookup(const char *sym, int ver, cuuint64_t flags, const char *expect_variant)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st = 99;
    CHECK(gpa(sym, &p, ver, flags, &st) == CUDA_SUCCESS);
    CHECK(st == CU_GET_PROC_ADDRESS_SUCCESS && p);
    CHECK(p != fakecuda_addr(expect_variant)); /* wrapped */
    return p;
}

static void bootstrap(void)
{
    h = dlopen("libcuda.so.1", RTLD_LAZY);
    CHECK(h);
    gpa2_fn g2 = (gpa2_fn)dlsym(h, "cuGetProcAddress_v2");
    CHECK(g2 && (void *)g2 != fakecuda_addr("cuGetProcAddress_v2"));
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st;
    CHECK(g2("", &p, 0, 0, &st) == CUDA_SUCCESS && !p && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CHECK(g2("cuGetProcAddress", &p, 12000, 0, &st) == CUDA_SUCCESS);
    CHECK(p && p != fakecuda_addr("cuGetProcAddress_v2")); /* the self-reference is wrapped */
    gpa = (gpa2_fn)p;
}

static int paths(void)
{
    /* 1. PLT: the program is linked against libcuda, the preload comes first */
    Dl_info di;
    CHECK(dladdr((void *)cuLaunchKernel, &di) && strstr(di.dli_fname, "libtunerguard"));
    for (int i = 0; i < 3; i++)
        CHECK(cuLaunchKernel((CUfunction)0x10, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS);
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
    CHECK(cuCtxSynchronize_v2(NULL) == CUDA_SUCCESS);
    char buf[8];
    CHECK(cuMemcpyDtoH(buf, 0, sizeof buf) == CUDA_SUCCESS); /* cuMemcpyDtoH_v2 */
    CHECK(fakecuda_count("cuLaunchKernel") == 3 && fakecuda_count("cuMemcpyDtoH_v2") == 1);

    /* 2. dlsym on a libcuda handle (Triton's launcher, cuBLAS) */
    bootstrap();
    launchex_fn lex = (launchex_fn)dlsym(h, "cuLaunchKernelEx");
    CHECK(lex && (void *)lex != fakecuda_addr("cuLaunchKernelEx"));
    CUlaunchConfig cfg = {.gridDimX = 1};
    for (int i = 0; i < 4; i++)
        CHECK(lex(&cfg, (CUfunction)0x20, NULL, NULL) == CUDA_SUCCESS);
    CHECK(fakecuda_count("cuLaunchKernelEx") == 4);
    CHECK(dlsym(h, "cuInit") == fakecuda_addr("cuInit"));                     /* not wrapped */
    CHECK(dlsym(h, "cuGetExportTable") == fakecuda_addr("cuGetExportTable")); /* never */
    CHECK(dlsym(RTLD_DEFAULT, "cuLaunchKernel") != NULL); /* libcuda is loaded */
    CHECK(dlsym(h, "cuNoSuchThing") == NULL);

    /* 3. cuGetProcAddress, cudart-style, both ABIs and per-thread variants */
    CUresult (*cs1)(void) = (CUresult(*)(void))lookup("cuCtxSynchronize", 2000, 0, "cuCtxSynchronize");
    CUresult (*cs2)(CUcontext) = (CUresult(*)(CUcontext))lookup("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
    CHECK(cs1() == CUDA_SUCCESS && cs2(NULL) == CUDA_SUCCESS && cs2(NULL) == CUDA_SUCCESS);
    CHECK(fakecuda_count("cuCtxSynchronize") == 2 && fakecuda_count("cuCtxSynchronize_v2") == 3);
    launch_fn lpt = (launch_fn)lookup("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                      "cuLaunchKernel_ptsz");
    CHECK(lpt((CUfunction)0x30, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS);
    CHECK(fakecuda_count("cuLaunchKernel_ptsz") == 1 && fakecuda_count("cuLaunchKernel") == 3);
    stream_fn ssp = (stream_fn)lookup("cuStreamSynchronize", 7000, 2, "cuStreamSynchronize_ptsz");
    CHECK(ssp(NULL) == CUDA_SUCCESS && fakecuda_count("cuStreamSynchronize_ptsz") == 1);
    CUresult (*dtoha)(void *, CUdeviceptr, size_t, CUstream) =
        (CUresult(*)(void *, CUdeviceptr, size_t, CUstream))lookup("cuMemcpyDtoHAsync", 3020, 0, "cuMemcpyDtoHAsync_v2");
    CHECK(dtoha(buf, 0, 1, NULL) == CUDA_SUCCESS && fakecuda_count("cuMemcpyDtoHAsync_v2") == 1);
    gpa1_fn g1 = (gpa1_fn)dlsym(h, "cuGetProcAddress");
    CHECK(g1 && (void *)g1 != fakecuda_addr("cuGetProcAddress"));
    void *p = NULL;
    CHECK(g1("cuStreamQuery", &p, 7000, 2) == CUDA_SUCCESS && p && p != fakecuda_addr("cuStreamQuery_ptsz"));
    CHECK(((stream_fn)p)(NULL) == CUDA_SUCCESS && fakecuda_count("cuStreamQuery_ptsz") == 1);
    CHECK(g1("cuGetProcAddress", &p, 11030, 0) == CUDA_SUCCESS && p == (void *)g1);

    check_counts("paths");
    printf("paths ok\n");
    return 0;
}

#define NTHREADS 8
#define NCALLS 500
static pthread_barrier_t barrier;
static launchex_fn t_lex;
static stream_fn t_ssp;

static void *worker(void *arg)
{
    CUlaunchConfig cfg = {.gridDimX = 1};
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < NCALLS; i++) {
        cuLaunchKernel((CUfunction)arg, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL); /* PLT */
        t_lex(&cfg, (CUfunction)arg, NULL, NULL);                                /* dlsym */
        t_ssp(NULL);                                                             /* gpa */
    }
    return NULL;
}

static int threads(void)
{
    bootstrap();
    t_lex = (launchex_fn)dlsym(h, "cuLaunchKernelEx_ptsz");
    CHECK(t_lex && (void *)t_lex != fakecuda_addr("cuLaunchKernelEx_ptsz"));
    t_ssp = (stream_fn)lookup("cuStreamSynchronize", 7000, 2, "cuStreamSynchronize_ptsz");
    pthread_t th[NTHREADS];
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    for (long i = 0; i < NTHREADS; i++)
        CHECK(pthread_create(&th[i], NULL, worker, (void *)(i + 1)) == 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    CHECK(fakecuda_count("cuLaunchKernel") == NTHREADS * NCALLS);
    CHECK(fakecuda_count("cuLaunchKernelEx_ptsz") == NTHREADS * NCALLS);
    CHECK(fakecuda_count("cuStreamSynchronize_ptsz") == NTHREADS * NCALLS);
    check_counts("threads");
    printf("threads ok\n");
    return 0;
}

static int forked(void)
{
    bootstrap();
    for (int i = 0; i < 5; i++)
        cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    check_counts("before fork");
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (tg_count)
            CHECK(tg_count("cuLaunchKernel") == 0); /* the child starts clean */
        fakecuda_reset();
        stream_fn ss = (stream_fn)lookup("cuStreamSynchronize", 2000, 0, "cuStreamSynchronize");
        cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        CHECK(ss(NULL) == CUDA_SUCCESS);
        check_counts("child");
        _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    check_counts("parent after fork");
    printf("fork ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    tg_count = (unsigned long long (*)(const char *))dlsym(RTLD_DEFAULT, "tunerguard_cuda_count");
    if (getenv("T_REQUIRE_COUNTS"))
        CHECK(tg_count);
    if (!strcmp(argv[1], "paths"))
        return paths();
    if (!strcmp(argv[1], "threads"))
        return threads();
    if (!strcmp(argv[1], "fork"))
        return forked();
    return 2;
}
