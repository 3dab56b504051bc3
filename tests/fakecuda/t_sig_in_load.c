/* A signal handler that calls the driver, run on the thread that makes the
 * process's first driver call while that thread registers the loader's
 * fork guard (loader/core_link.c, guard_fork_once).  The handler must pass
 * through, not wait for the registration its own thread is in the middle
 * of: it spun for ever before (`loading` was set after the guard).
 *
 * The moment is made exact, not hoped for: this program defines
 * __register_atfork, which comes before libc's in the global scope, so it
 * sees the loader's call and raises the signal right there, then hands the
 * call on to libc's.  alarm(10) turns a hang into a failure.  Exit 0 when
 * both the handler's call and the first call returned. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int armed;
static atomic_int handler_rc = -1;

static void on_usr1(int s)
{
    (void)s;
    atomic_store(&handler_rc, (int)cuStreamQuery(NULL));
}

int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso)
{
    static int (*real)(void (*)(void), void (*)(void), void (*)(void), void *);
    if (!real)
        real = (int (*)(void (*)(void), void (*)(void), void (*)(void), void *))dlvsym(RTLD_NEXT, "__register_atfork",
                                                                                     "GLIBC_2.3.2");
    if (atomic_exchange(&armed, 0))
        raise(SIGUSR1); /* inside the loader's registration of its fork guard */
    return real ? real(prepare, parent, child, dso) : -1;
}

int main(void)
{
    signal(SIGUSR1, on_usr1);
    alarm(10);
    atomic_store(&armed, 1);
    CUresult rc = cuCtxSynchronize(); /* the first driver call: loads the core */
    int hrc = atomic_load(&handler_rc);
    printf("first call %d, handler's call %d, signal raised %s\n", (int)rc, hrc, atomic_load(&armed) ? "no" : "yes");
    if (atomic_load(&armed)) {
        printf("the loader registered no fork guard at the first call: nothing tested\n");
        return 1;
    }
    return rc == CUDA_SUCCESS && hrc == CUDA_SUCCESS ? 0 : 1;
}
