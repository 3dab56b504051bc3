/* Whether the GIL is on, for serialize's policy (guard/serialize_wait.c, "the
 * turn"): the turn is a policy for a GIL, and without one it would serialize
 * every tuned call of the program.  A build with a GIL: always on.  A
 * free-threaded build: as sys._is_gil_enabled() said when last asked.
 *
 * CPython keeps the answer inside (the interpreter's GIL state, read by
 * _PyEval_IsGILEnabled, which libpython does not export), and it changes
 * only at start-up (PYTHON_GIL, -X gil) and during an import (an extension
 * that does not declare Py_mod_gil turns the GIL on for good; one being
 * loaded may turn it on for the time of its load).  So the guarded call reads
 * a cached word, asked once when unknown, and asked again where a thread is
 * about to wait anyway (for the turn, for a tuner): a GIL turned on by a later
 * import is seen at the first wait after it, and until then the calls take
 * their tuners' locks only, as correct as with the turn; a GIL seen on during
 * an import that turned it off again is seen off at the next wait for the turn. */
#ifndef TG_GIL_STATE_H
#define TG_GIL_STATE_H

#include "core/py_api.h"

/* 1 on, 0 off, -1 not asked yet (free-threaded builds only). */
extern int tg__gil_state;

/* Ask sys._is_gil_enabled() and keep the answer; returns it (1 on, 0 off).
 * A build with a GIL: 1 without asking.  Where it cannot be asked (no such
 * function, an error), the GIL counts as on: serialize keeps its policy for a
 * GIL.  Thread state attached; calls Python (a builtin), allocates nothing. */
int tg__gil_refresh(void);

/* Is the GIL on, as last seen?  One relaxed load once known.  Thread state
 * attached (the first call may ask). */
static inline int tg__gil_on(void)
{
    int s = __atomic_load_n(&tg__gil_state, __ATOMIC_RELAXED);
    if (__builtin_expect(s < 0, 0))
        s = tg__gil_refresh();
    return s;
}

#endif
