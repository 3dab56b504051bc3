/* The per-thread record.  initial-exec TLS (the library is built with
 * -ftls-model=initial-exec), so tg__self() is one TLS address computation. */
#include "core/thread_state.h"
#include "core/startup.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread struct tg_thread tg__tls_rec;

TG_STARTUP struct tg_thread *tg__self(void)
{
    struct tg_thread *t = &tg__tls_rec;
    if (__builtin_expect(t->tid == 0, 0)) {
        /* First use on this thread: two syscalls, then cached.  After fork the
         * child's copy of the forking thread would keep the parent's tid; the
         * atfork handler sets its new one (tg__thread_atfork_child). */
        t->tid = (pid_t)syscall(SYS_gettid);
        t->is_main = t->tid == (pid_t)getpid();
        t->ident = (unsigned long)pthread_self();
        t->last.device = -1;
        t->entry_device = -1;
    }
    return t;
}

TG_STARTUP struct tg_thread *tg__self_busy(void)
{
    return &tg__tls_rec;
}

/* fork child: the calling thread is the only one left; it holds no tuner and
 * has a new tid.  Its stack goes on in the child, frames and all: `busy`
 * and `tuning`, counted in and out by those frames, stay as they are (reset,
 * a frame that raised them would take them below zero on its way out); the
 * guarded frames among them see the guard's fork count changed
 * (guard/guard_thread.h, tg__gthread_atfork_child, which the fork-child
 * handler calls next) and leave nheld and depth alone. */
void tg__thread_atfork_child(void)
{
    struct tg_thread *t = &tg__tls_rec;
    if (t->tid) { /* its new tid at once: frames from before the fork go on with t (a wait among them) */
        t->tid = (pid_t)syscall(SYS_gettid);
        t->is_main = 1; /* the child's one thread: its tid is the child's pid */
    }
    t->nheld = 0;
    t->depth = 0;
    t->lazy_inst = 0; /* its frame, if any, sees the fork count changed and leaves it */
    t->session_launches = t->session_syncs = t->session_multi = 0;
    t->last.inside = 0;
}

/* ESRCH means the thread is gone; any other answer, that it may live. */
int tg_tid_alive(pid_t tid)
{
    int saved = errno;
    int alive = syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH;
    errno = saved;
    return alive;
}
