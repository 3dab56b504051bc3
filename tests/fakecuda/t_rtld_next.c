#define _GNU_SOURCE
/* Run with LD_PRELOAD="libtunerguard.so libtg_other.so": the second
 * interposer's dlsym(RTLD_NEXT, ...) must keep working through tunerguard's
 * dlsym, for libc names and for driver names (passed through unwrapped). */
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

int main(void)
{
    unsigned (*other_calls)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "other_calls");
    void *(*other_next_cu)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "other_next_cu");
    CHECK(other_calls && other_next_cu); /* the second interposer is loaded */
    CHECK(getppid() == (pid_t)syscall(SYS_getppid));
    CHECK(getppid() == (pid_t)syscall(SYS_getppid));
    CHECK(other_calls() == 2);
    /* RTLD_NEXT from the other interposer: the driver's own export, untouched */
    void *nx = other_next_cu("cuLaunchKernel");
    Dl_info di;
    if (nx != fakecuda_addr("cuLaunchKernel") && dladdr(nx, &di))
        fprintf(stderr, "RTLD_NEXT gave %p in %s (%s)\n", nx, di.dli_fname, di.dli_sname);
    CHECK(nx == fakecuda_addr("cuLaunchKernel"));
    /* and the program's own lookups still go through tunerguard */
    CHECK(dlsym(dlopen("libcuda.so.1", RTLD_LAZY), "cuLaunchKernel") != fakecuda_addr("cuLaunchKernel"));
    printf("rtld_next ok\n");
    return 0;
}
