/* A process that never loads libcuda, run with tunerguard preloaded: it must
 * be untouched.  Driver names look absent (not tunerguard's own exported
 * definitions), dlsym works as usual, no libcuda got loaded, no thread was
 * started. */
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
    CHECK(dlsym(RTLD_DEFAULT, "cuLaunchKernel") == NULL);
    CHECK(dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2") == NULL);
    CHECK(dlsym(RTLD_DEFAULT, "cuInit") == NULL);
    void *libc = dlopen("libc.so.6", RTLD_NOW);
    CHECK(libc && dlsym(libc, "strlen") == dlsym(RTLD_DEFAULT, "strlen"));
    CHECK(dlsym(RTLD_NEXT, "strlen") != NULL);
    CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL); /* nothing loaded it */
    CHECK(count_threads() == 1);
    printf("nocuda ok\n");
    return 0;
}
