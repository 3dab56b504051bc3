/* Loads the client library in a local scope, as CPython loads extension
 * modules, and starts "the profiler": the subscription must reach the real
 * (fake) libcupti, with or without tunerguard preloaded.
 * usage: t_cupti_forward CLIENT [OTHER_LIBCUPTI]
 * OTHER_LIBCUPTI: another copy of libcupti, loaded (locally) before the
 * client, which links its own: the subscription must land in the client's
 * copy, never in the other one. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    /* no libcupti in the process yet: tunerguard's own cuptiSubscribe export
     * must not pass for one */
    if (dlsym(RTLD_DEFAULT, "cuptiSubscribe") || dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks")) {
        fprintf(stderr, "t_cupti_forward: dlsym(RTLD_DEFAULT, cupti*) is not NULL without a libcupti\n");
        return 1;
    }
    void *other = NULL;
    if (argc > 2 && !(other = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "t_cupti_forward: %s\n", dlerror());
        return 2;
    }
    void *h = dlopen(argc > 1 ? argv[1] : "libcupticonsumer.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "t_cupti_forward: %s\n", dlerror());
        return 2;
    }
    int (*start)(void) = (int (*)(void))dlsym(h, "consumer_start_profiler");
    int rc = start ? start() : 2;
    printf("t_cupti_forward: %s\n", rc == 0 ? "subscription reached libcupti" : "subscription lost");
    if (other) {
        int (*n)(void) = (int (*)(void))dlsym(other, "fakecupti_subscribed");
        int in_other = n ? n() : -1;
        printf("t_cupti_forward: the other copy has %d subscriptions (want 0)\n", in_other);
        if (in_other != 0)
            rc = 1;
    }
    return rc;
}
