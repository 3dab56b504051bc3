/* A lock that a thread running Python takes around work that itself runs
 * Python code (attribute look-ups, class changes, imports): arming, guard
 * installs.  Such work is rare and may re-enter on the same thread (a guard
 * installed from a class made while another is installed), so the lock is
 * recursive on its owner.  A thread that must block for it detaches its
 * thread state first (PyEval_SaveThread) and attaches again once it holds
 * the lock: with a GIL, the holder may have let the GIL go inside the
 * Python code it runs, and a waiter keeping the GIL would never see it
 * back; without one, a waiter left attached would hold up every
 * stop-the-world pause (the collector's), the holder's own allocations'
 * among them.  What it cannot prevent: Python code run under it (a class's
 * metaclass __getattribute__, a module's __getattr__, looked up while its
 * class is guarded) that waits for another thread which itself needs the
 * lock (it makes a subclass of a guarded class) waits as long as its own
 * wait lets it.  Uncontended: one trylock, one relaxed load.  Header-only:
 * the loader (arming) and the core (installs) each take their own.  Not
 * from a signal handler; the thread may or may not hold a thread state. */
#ifndef TG_PY_LOCK_H
#define TG_PY_LOCK_H

#include "core/py_api.h"

#include <pthread.h>

struct tg_py_lock {
    pthread_mutex_t mu;
    unsigned long owner; /* pthread_self() of the holder, 0 when free; written by the holder only */
    unsigned depth;      /* the holder's nesting; the holder's own */
};
#define TG_PY_LOCK_INIT {PTHREAD_MUTEX_INITIALIZER, 0, 0}

static inline void tg_py_lock(struct tg_py_lock *l)
{
    const unsigned long self = (unsigned long)pthread_self();
    /* Only the holder stores its own id: seeing it is holding it. */
    if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == self) {
        l->depth++;
        return;
    }
    if (pthread_mutex_trylock(&l->mu) != 0) {
        PyThreadState *ts = tg_py_gil_held() ? tg_py.PyEval_SaveThread() : NULL;
        pthread_mutex_lock(&l->mu);
        if (ts)
            tg_py.PyEval_RestoreThread(ts);
    }
    __atomic_store_n(&l->owner, self, __ATOMIC_RELAXED);
    l->depth = 1;
}

/* l taken without waiting (1: held, re-entered included), else 0. */
static inline int tg_py_trylock(struct tg_py_lock *l)
{
    const unsigned long self = (unsigned long)pthread_self();
    if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == self) {
        l->depth++;
        return 1;
    }
    if (pthread_mutex_trylock(&l->mu) != 0)
        return 0;
    __atomic_store_n(&l->owner, self, __ATOMIC_RELAXED);
    l->depth = 1;
    return 1;
}

static inline void tg_py_unlock(struct tg_py_lock *l)
{
    if (--l->depth == 0) {
        __atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&l->mu);
    }
}

/* Does this thread hold l? */
static inline int tg_py_lock_held(const struct tg_py_lock *l)
{
    return __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == (unsigned long)pthread_self();
}

/* In a fork child (the forking thread the only one left): a lock another
 * thread of the parent held at the fork is free again (that thread is not
 * in the child, and the state it guarded is as that thread left it: a
 * guard install half made is a slot never published).  One the forking
 * thread itself held stays held, for it to release. */
static inline void tg_py_lock_atfork_child(struct tg_py_lock *l)
{
    if (!tg_py_lock_held(l)) {
        pthread_mutex_init(&l->mu, NULL);
        l->owner = 0;
        l->depth = 0;
    }
}

#endif
