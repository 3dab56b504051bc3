/* The program's own wrapper of a guarded method (seeds/001's `Autotuner.run
 * = wrapped`, calling the original, whose guard starts the session): a call
 * through it opens no session of its own (guard/session.c's guard_call sends
 * it here), and a wrapper that makes its callers wait is said once.  Out of
 * line from the guarded call's hot path.  GIL held (attached, where there is
 * none). */
#include "guard/guard_internal.h"
#include "core/log.h"
#include "core/thread_state.h"

#include <string.h>

/* The program's own wrapper around the original (seeds/001's
 * `Autotuner.run = wrapped`, calling the original): not where the shared
 * state is touched, so no session here; the original's guard starts one.
 * Note whether another thread is inside now: if this thread finds the tuner
 * free when it reaches the original, the wrapper made it wait (a lock), said
 * once at verbosity=1. */
PyObject *tg__wrapper_call(struct tg_guard *g, struct tg_thread *t, PyObject *f, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames)
{
    struct tg_tuner *pu = tg_tuner_find((uintptr_t)args[0]);
    uintptr_t saved_busy = tg__gthread(t)->wrapped_busy;
    const void *saved_by = tg__gthread(t)->wrapped_by;
    if (pu && TG_NOCC(pu) > 0 && !tg_tuner_is_inside(pu, t)) {
        tg__gthread(t)->wrapped_busy = (uintptr_t)args[0];
        tg__gthread(t)->wrapped_by = g;
    }
    PyObject *res = tg__call_orig(g, f, args, nargs, kwnames);
    tg__gthread(t)->wrapped_busy = saved_busy;
    tg__gthread(t)->wrapped_by = saved_by;
    return res;
}

/* Entered the wrapper while another thread was inside, and found the tuner
 * free here: the wrapper serialized it (said once, at verbosity=1). */
void tg__note_wrapper_serializes(struct tg_thread *t)
{
    struct tg_guard *w = (struct tg_guard *)tg__gthread(t)->wrapped_by;
    if (!__atomic_load_n(&w->said_serializes, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&w->said_serializes, 1, __ATOMIC_RELAXED)) {
        const char *where = strncmp(w->where, " by ", 4) == 0 ? w->where + 4 : "its replacement";
        tg__info(1, "%s is wrapped by the program (%s), and the wrapper serializes its callers (a thread "
                    "that came in while another was inside waited in it): no race through it", w->method, where);
    }
    tg__gthread(t)->wrapped_busy = 0;
}
