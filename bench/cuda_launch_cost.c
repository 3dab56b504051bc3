/* Added cost of an intercepted cuLaunchKernel, against the direct call, with
 * the stand-in driver (tests/fakecuda).  Not a test: prints figures.
 *
 *   cc -O2 -I. -I/usr/local/cuda/include bench/cuda_launch_cost.c -o build/cuda_launch_cost -ldl
 *   LD_LIBRARY_PATH=build/tests/fakecuda LD_PRELOAD=build/libtunerguard.so build/cuda_launch_cost [N]
 *
 * "direct" calls the fake's own cuLaunchKernel (fakecuda_addr); "hooked"
 * calls what dlsym(libcuda, "cuLaunchKernel") returns, i.e. tunerguard's
 * wrapper when preloaded.  Both on a created stream (the device cache hits)
 * and on the NULL stream (one extra real cuCtxGetCurrent per call; the fake
 * logs that call too, so this figure overstates the real driver's).
 * "exported" calls what dlsym(RTLD_DEFAULT, "cuLaunchKernel") returns: with
 * the preload, its exported definition, the path of a caller linked against
 * libcuda (the loader's forwarder, then the core's entry and the wrapper).
 * For instruction counts run under
 *   valgrind --tool=callgrind --toggle-collect='loop_*' ... build/cuda_launch_cost 100000
 * and read the inclusive Ir of each loop_* function (callgrind_annotate --inclusive=yes). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* one named loop per configuration, for callgrind's --toggle-collect */
#define LOOP(name)                                                                 \
    static __attribute__((noinline)) void name(launch_fn f, CUstream s, long n)    \
    {                                                                              \
        for (long i = 0; i < n; i++)                                               \
            f((CUfunction)0x10, 1, 1, 1, 128, 1, 1, 0, s, NULL, NULL);             \
    }
LOOP(loop_direct_stream)
LOOP(loop_hooked_stream)
LOOP(loop_direct_null)
LOOP(loop_hooked_null)
LOOP(loop_exported_stream)

static double best_ns(void (*loop)(launch_fn, CUstream, long), launch_fn f, CUstream s, long n)
{
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        loop(f, s, n);
        double dt = (now() - t0) / n * 1e9;
        if (dt < best)
            best = dt;
    }
    return best;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "no libcuda.so.1 (set LD_LIBRARY_PATH to build/tests/fakecuda)\n");
        return 1;
    }
    void *(*addr)(const char *) = (void *(*)(const char *))dlsym(h, "fakecuda_addr");
    CUresult (*create)(CUstream *, unsigned) = (CUresult(*)(CUstream *, unsigned))dlsym(h, "cuStreamCreate");
    if (!addr || !create) {
        fprintf(stderr, "this is not the fake driver\n");
        return 1;
    }
    launch_fn direct = (launch_fn)addr("cuLaunchKernel");
    launch_fn hooked = (launch_fn)dlsym(h, "cuLaunchKernel");
    CUstream s;
    create(&s, 0);
    printf("hooked pointer is %s\n", hooked == direct ? "the driver's own (no tunerguard)" : "tunerguard's wrapper");
    double ds = best_ns(loop_direct_stream, direct, s, n);
    double hs = best_ns(loop_hooked_stream, hooked, s, n);
    double dn = best_ns(loop_direct_null, direct, NULL, n);
    double hn = best_ns(loop_hooked_null, hooked, NULL, n);
    launch_fn exported = (launch_fn)dlsym(RTLD_DEFAULT, "cuLaunchKernel");
    double es = exported ? best_ns(loop_exported_stream, exported, s, n) : 0;
    printf("stream: direct %.1f ns  hooked %.1f ns  added %.1f ns/launch\n", ds, hs, hs - ds);
    printf("NULL  : direct %.1f ns  hooked %.1f ns  added %.1f ns/launch\n", dn, hn, hn - dn);
    if (exported && (void *)exported != (void *)direct)
        printf("stream: direct %.1f ns  exported %.1f ns  added %.1f ns/launch (RTLD_DEFAULT / PLT path)\n", ds,
               es, es - ds);
    return 0;
}
