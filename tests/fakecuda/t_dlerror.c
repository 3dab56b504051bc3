/* dlerror() at the start of main: nothing pending, tunerguard's constructor
 * included (it asks whether the process is Python without a failing dlsym,
 * which would leave "undefined symbol: PySys_AddAuditHook" here).
 *
 * dlerror() around dlsym on the libcuda handle, tunerguard preloaded or not:
 * the first successful lookup on libcuda is where tunerguard resolves its
 * table, with lookups of its own that fail on an older driver (cuKernelGetName,
 * cuLaunchKernelEx, ...); the caller's dlerror() must still say nothing after
 * its successful lookup, and still say something after a failed one.
 * Run against the old driver (LD_LIBRARY_PATH=.../old), dlopen'ed only, so
 * nothing reached libcuda before the first dlsym below. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

int main(void)
{
    const char *first = dlerror();
    if (first)
        fprintf(stderr, "dlerror() at the start of main: %s\n", first);
    CHECK(first == NULL);
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CHECK(h);
    const char *e;
    (void)dlerror();
    void *p = dlsym(h, "cuGetProcAddress"); /* the first lookup on libcuda */
    e = dlerror();
    if (e)
        fprintf(stderr, "dlerror() after a successful dlsym: %s\n", e);
    CHECK(p && e == NULL);
    (void)dlerror();
    p = dlsym(h, "cuLaunchKernel");
    CHECK(p && dlerror() == NULL);
    /* a name the old driver lacks: NULL and a message, as always */
    (void)dlerror();
    CHECK(dlsym(h, "cuLaunchKernelEx") == NULL);
    CHECK(dlerror() != NULL);
    printf("dlerror ok\n");
    return 0;
}
