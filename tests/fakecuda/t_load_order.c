#define _GNU_SOURCE
/* The core's first load against another thread's dlopen (loader/core_link.c).
 * Run with LD_PRELOAD=libtunerguard.so, linked against the fake (-lcuda).
 *
 * Thread B dlopens tests/fakecuda/load_order_ctor.c, whose constructor calls
 * the driver; thread A makes the process's first CUDA call meanwhile, so it
 * loads the core, and in that load waits for the dynamic linker's lock,
 * which B holds while its library's constructor runs.  If the load held
 * tunerguard's own lock across dlopen, B's call (which needs the core too)
 * would wait for A, and A for B: the test's timeout.  The overlap is ordered
 * by observed state, not by time: B's constructor goes on only once A has
 * announced its call and is blocked in futex(2) (/proc/self/task/TID/syscall).
 * Both calls must reach the driver and be recorded by the core. */
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Shared with the constructor's library (this program exports them). */
_Atomic int tlo_in_ctor; /* B is inside dlopen, in the constructor */
_Atomic int tlo_a_tid;   /* A is about to make its call */
_Atomic int tlo_skip;    /* /proc/self/task/TID/syscall unreadable here */

static CUresult a_rc = CUDA_ERROR_UNKNOWN;

static void *thread_a(void *arg)
{
    (void)arg;
    while (!atomic_load(&tlo_in_ctor))
        sched_yield();
    atomic_store(&tlo_a_tid, (int)syscall(SYS_gettid));
    a_rc = cuLaunchKernel((CUfunction)16, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL);
    return NULL;
}

static void *thread_b(void *path)
{
    return dlopen((const char *)path, RTLD_NOW);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: t_load_order LIBTLO_CTOR\n");
        return 2;
    }
    pthread_t a, b;
    void *h = NULL;
    pthread_create(&a, NULL, thread_a, NULL);
    pthread_create(&b, NULL, thread_b, argv[1]);
    pthread_join(b, &h);
    pthread_join(a, NULL);
    if (atomic_load(&tlo_skip)) {
        printf("skip: /proc/self/task/TID/syscall is not readable here\n");
        return 77;
    }
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    int *ctor_rc = (int *)dlsym(h, "tlo_ctor_rc");
    unsigned long long (*recorded)(const char *) =
        (unsigned long long (*)(const char *))dlsym(RTLD_DEFAULT, "tunerguard_cuda_count");
    unsigned long long driver = fakecuda_count("cuLaunchKernel");
    unsigned long long rec = recorded ? recorded("cuLaunchKernel") : 0;
    printf("a %d, ctor %d, driver %llu, recorded %llu\n", (int)a_rc, ctor_rc ? *ctor_rc : -1, driver, rec);
    return a_rc == CUDA_SUCCESS && ctor_rc && *ctor_rc == CUDA_SUCCESS && driver == 2 && rec == 2 ? 0 : 1;
}
