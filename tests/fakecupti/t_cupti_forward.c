/* Loads the client library in a local scope, as CPython loads extension
 * modules, and starts "the profiler": the subscription must reach the real
 * (fake) libcupti, with or without tunerguard preloaded. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    void *h = dlopen(argc > 1 ? argv[1] : "libcupticonsumer.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "t_cupti_forward: %s\n", dlerror());
        return 2;
    }
    int (*start)(void) = (int (*)(void))dlsym(h, "consumer_start_profiler");
    int rc = start ? start() : 2;
    printf("t_cupti_forward: %s\n", rc == 0 ? "subscription reached libcupti" : "subscription lost");
    return rc;
}
