/* Holding another thread where it is, to read its Python stack without the
 * GIL (free-threaded builds; docs/free-threading.md, "Reading another
 * thread's Python stack").
 *
 * A thread's frames do not change while its thread state is detached.  Its
 * CUDA hooks (cuda/cuda_record.h, `last.inside`) and tunerguard's own waits
 * (`wait_seq`: the report lock, serialize's waits) are where it is detached
 * for a while.  A reader sets the hold request (`last.hold`) in that
 * thread's record; the thread, on its way out of a hook or a wait, loads it
 * and, while its thread state is still detached, parks on that word until
 * the reader clears it.
 *
 * The order.  The owner stores `inside` = 0 (or ends its wait), then loads
 * `hold` with no barrier between (a plain load: the hook's cost); the reader
 * stores `hold`, then makes every thread of the process pass a full barrier
 * (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED), then loads `inside`.
 * So either the owner's load sees the request, or the reader's load sees the
 * call (or the wait) over: a reader that finds the owner inside a detached
 * call or wait after its barrier knows the owner parks before it leaves.
 * Without membarrier (an old kernel, a seccomp filter) no thread is held and
 * the readers take the fallback (the thread's entry record). */
#ifndef TG_THREAD_HOLD_H
#define TG_THREAD_HOLD_H

#include <stdint.h>

#include "core/thread_state.h"

/* `last.hold`'s values. */
#define TG_HOLD_NONE 0u
#define TG_HOLD_ASKED 1u  /* a reader wants the thread held */
#define TG_HOLD_PARKED 2u /* the thread is parked on the word, detached */

/* The bound a reader waits for the thread to be held (ms). */
#define TG_HOLD_BOUND_MS 50
#define TG_HOLD_BOUND_TEXT "50 ms" /* for the reports' text */

/* The owner, after a CUDA call or one of tunerguard's waits, where it found
 * `last.hold` set: parks until the reader clears it, when its thread state
 * is detached (PyGILState_Check 0); returns at once when attached (a
 * thread parked attached would hold up every stop-the-world pause).  No
 * allocation; a futex wait.  Cold: called only while a report is read. */
void tg_hold_park(struct tg_thread *t);

/* Around one of tunerguard's own waits made with the thread state detached
 * (after PyEval_SaveThread, before PyEval_RestoreThread): the wait is a
 * parking point.  Owner only; the end may park (tg_hold_park). */
static inline void tg_hold_wait_begin(struct tg_thread *t)
{
    __atomic_store_n(&t->wait_seq, t->wait_seq + 1, __ATOMIC_RELEASE); /* odd: waiting */
}
static inline void tg_hold_wait_end(struct tg_thread *t)
{
    __atomic_store_n(&t->wait_seq, t->wait_seq + 1, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the load stays after the store (see above) */
    if (__builtin_expect(__atomic_load_n(&t->last.hold, __ATOMIC_RELAXED) != TG_HOLD_NONE, 0))
        tg_hold_park(t);
}

/* The owner, at the end of its outermost tuner session (nheld stored 0):
 * a reader that saw it inside a session after its barrier reads its thread
 * state, which must outlive the read; so where a request is set the owner
 * parks here (detached) until the reader releases it, before it can return
 * and end its thread.  One relaxed load where no reader asks. */
void tg_hold_session_park(struct tg_thread *t);
static inline void tg_hold_session_end(struct tg_thread *t)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the load stays after the store of nheld (see above) */
    if (__builtin_expect(__atomic_load_n(&t->last.hold, __ATOMIC_RELAXED) != TG_HOLD_NONE, 0))
        tg_hold_session_park(t);
}

/* The reader: hold thread ot (another thread's record; tstate its
 * PyThreadState) inside a detached CUDA call or wait, waiting at most
 * TG_HOLD_BOUND_MS for it to get there.  1: held, its frames do not change
 * until tg_hold_release(ot); 0: not held (not parked within the bound,
 * another reader holds it, no membarrier, or ot out of its tuner sessions:
 * its thread state is then not read), nothing to release.  Its
 * thread-state layout is read for the state (3.13, 3.14).  Any thread; the
 * reader's own thread state attached or not; no allocation. */
int tg_hold_other(struct tg_thread *ot, const void *tstate);
void tg_hold_release(struct tg_thread *ot);

#endif
