#define _GNU_SOURCE
/* The library tests/fakecuda/t_load_order.c dlopens in its thread B: its
 * constructor, run by the dynamic linker with its lock held, waits until
 * thread A is blocked (in futex(2), after announcing its first CUDA call),
 * then calls the driver itself. */
#include <cuda.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>

extern _Atomic int tlo_in_ctor, tlo_a_tid, tlo_skip; /* t_load_order's */
int tlo_ctor_rc = -1;

/* The system call TID is blocked in: its number, -1 running, -2 unreadable. */
static long blocked_in(int tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -2;
    long nr = -1;
    if (fscanf(f, "%ld", &nr) != 1)
        nr = -1; /* "running" */
    fclose(f);
    return nr;
}

__attribute__((constructor)) static void call_the_driver(void)
{
    atomic_store(&tlo_in_ctor, 1);
    int tid;
    while (!(tid = atomic_load(&tlo_a_tid)))
        sched_yield();
    long nr;
    while ((nr = blocked_in(tid)) != SYS_futex) {
        if (nr == -2) {
            atomic_store(&tlo_skip, 1);
            break;
        }
        sched_yield();
    }
    tlo_ctor_rc = cuLaunchKernel((CUfunction)16, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL);
}
