/* A process that never loads libcuda, run with tunerguard preloaded: it must
 * be untouched.  Driver and CUPTI names look absent (not tunerguard's own
 * exported definitions), whatever the mode; dlsym works as usual, no libcuda
 * got loaded, no thread was started. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static int count_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    CHECK(d);
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

int main(void)
{
    CHECK(getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "libtunerguard"));
    CHECK(dlsym(RTLD_DEFAULT, "dlsym") != NULL); /* the preload is in */
    /* in every mode, mode=off included (the ctest runs both): tunerguard's
     * own exports are no driver, and no libcupti either; and the failed
     * lookup says so in dlerror(), as any failed lookup does */
    static const char *const absent[] = {"cuLaunchKernel", "cuGetProcAddress", "cuGetProcAddress_v2",
                                         "cuInit", "cuptiSubscribe", "cuptiSubscribe_v2",
                                         "cuptiActivityRegisterCallbacks"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        (void)dlerror();
        void *p = dlsym(RTLD_DEFAULT, absent[i]);
        const char *e = dlerror();
        if (p || !e)
            fprintf(stderr, "dlsym(RTLD_DEFAULT, \"%s\") = %p, dlerror() %s\n", absent[i], p,
                    e ? e : "NULL");
        CHECK(p == NULL && e != NULL);
    }
    void *self = dlopen(NULL, RTLD_NOW); /* the main program's handle: the same scope */
    CHECK(self && dlsym(self, "cuLaunchKernel") == NULL && dlsym(self, "cuptiSubscribe") == NULL);
    void *libc = dlopen("libc.so.6", RTLD_NOW);
    CHECK(libc && dlsym(libc, "strlen") == dlsym(RTLD_DEFAULT, "strlen"));
    CHECK(dlsym(RTLD_NEXT, "strlen") != NULL);
    CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL); /* nothing loaded it */
    CHECK(count_threads() == 1);
    printf("nocuda ok\n");
    return 0;
}
