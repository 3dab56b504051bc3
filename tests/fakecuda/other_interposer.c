/* A second LD_PRELOAD interposer, loaded after tunerguard, that does what
 * HAMi-style tools do: wraps a libc function and finds the real one with
 * dlsym(RTLD_NEXT, ...).  If tunerguard's dlsym did not tail-call, glibc would
 * resolve RTLD_NEXT relative to tunerguard and hand this library its own
 * definition back (notes/cuda-interception.md §2.3): it aborts then. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

static unsigned calls;

API pid_t getppid(void)
{
    static pid_t (*next)(void);
    if (!next)
        next = (pid_t(*)(void))dlsym(RTLD_NEXT, "getppid");
    if (!next || next == getppid) {
        static const char msg[] = "other_interposer: dlsym(RTLD_NEXT) returned our own getppid\n";
        write(2, msg, sizeof msg - 1);
        abort();
    }
    calls++;
    return next();
}

API unsigned other_calls(void)
{
    return calls;
}

/* What RTLD_NEXT gives this library for a driver name.  Not a tail call
 * here: RTLD_NEXT must be resolved from inside this library. */
API void *other_next_cu(const char *name)
{
    void *volatile p = dlsym(RTLD_NEXT, name);
    return p;
}
