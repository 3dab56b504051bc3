/* A waiter that abandons its wait for a tuner (a signal handler raised: its
 * Ctrl-C) when the lock is free at that moment wakes the FIFO's new head
 * (guard/serialize_wait.c, tg__abandon_wait).  The holder's unlock woke the
 * abandoning thread, the head then, and that wake-up leaves with it: the
 * next waiter, left parked, would enter only at its own time-out (a second,
 * off the main thread) instead of at once.
 *
 * The overlap is forced, not timed: the abandoning thread is the main
 * thread (it runs the signal handlers after each timed stretch), the
 * holder's unlock happens inside its signal check, with the GIL, once the
 * second waiter is queued behind it, and that check then raises.  What is
 * checked first is the wake-up itself (the second waiter's park word moved
 * during the abandon), then that it entered long before its own time-out.
 * The GIL is a mutex here (PyEval_SaveThread / RestoreThread). */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "core/options.h"
#include "core/py_api.h"
#include "core/thread_state.h"
#include "detectors/tuner_table.h"
#include "guard/serialize_wait.h"

#include "fake_gil.h"

static struct tg_tuner u;
static struct tg_thread *holder;               /* this test's thread: holds u until the signal check */
static struct tg_thread *_Atomic first_rec;    /* the abandoning waiter (the main thread's role) */
static struct tg_thread *_Atomic second_rec;   /* the waiter queued behind it */
static _Atomic int raised;                     /* the signal check raised (after the unlock) */
static uint32_t second_word;                   /* second's park word at the unlock */
static uint64_t abandon_ns;                    /* when the check raised */

/* The first waiter's signal check after a timed stretch (GIL held): once the
 * second waiter is queued behind it, the holder leaves (its unlock wakes the
 * head, this thread, which is not parked now), then the handler raises. */
static int check_signals(void)
{
    struct tg_thread *s = atomic_load(&second_rec);
    if (atomic_load(&raised) || !s || u.waiters < 2 || u.wq_head != atomic_load(&first_rec))
        return 0;
    second_word = __atomic_load_n(&s->park, __ATOMIC_ACQUIRE);
    struct tg_thread *w = tg_tuner_unlock(&u, holder);
    cr_assert_eq(w, atomic_load(&first_rec), "the unlock wakes the head");
    tg_park_wake(&w->park);
    cr_assert_eq(__atomic_load_n(&u.owner, __ATOMIC_ACQUIRE), 0, "not starving: the lock is free");
    abandon_ns = tg_mono_ns();
    atomic_store(&raised, 1);
    return -1;
}

static void setup(void)
{
    memset(&u, 0, sizeof u);
    u.noted = 1; /* the contended list reads Python attributes: none here */
    tg_opts.wait_timeout = 3600;
    tg_py.PyEval_SaveThread = save_thread;
    tg_py.PyEval_RestoreThread = restore_thread;
    tg_py.PySys_Audit = audit;
    tg_py.PyErr_Clear = err_clear;
    tg_py.PyErr_CheckSignals = check_signals;
}
TestSuite(wait_abandon, .init = setup);

static _Atomic int first_rc = 2, second_rc = 2;
static _Atomic uint64_t second_entered_ns;

static void *first(void *p)
{
    (void)p;
    pthread_mutex_lock(&gil);
    struct tg_thread *t = tg__self();
    t->is_main = 1; /* runs the signal handlers after every timed stretch */
    atomic_store(&first_rec, t);
    atomic_store(&first_rc, tg__wait_for_tuner(&u, t, (PyObject *)(uintptr_t)0x1230, NULL));
    pthread_mutex_unlock(&gil);
    return NULL;
}

static void *second(void *p)
{
    (void)p;
    pthread_mutex_lock(&gil);
    struct tg_thread *t = tg__self();
    t->is_main = 0; /* looks every second by itself */
    atomic_store(&second_rec, t);
    int rc = tg__wait_for_tuner(&u, t, (PyObject *)(uintptr_t)0x1230, NULL);
    atomic_store(&second_entered_ns, tg_mono_ns());
    atomic_store(&second_rc, rc);
    if (rc == 1)
        tg__unlock_tuner(&u, t);
    pthread_mutex_unlock(&gil);
    return NULL;
}

/* Until pred() holds, the GIL let go between looks; bounded (20 s). */
static int until(int (*pred)(void))
{
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&gil);
        int ok = pred();
        pthread_mutex_unlock(&gil);
        if (ok)
            return 1;
        usleep(200);
    }
    return 0;
}
static int first_queued(void)
{
    return atomic_load(&first_rec) && u.wq_head == atomic_load(&first_rec);
}

Test(wait_abandon, a_waiter_leaving_a_free_tuner_wakes_the_new_head)
{
    holder = tg__self();
    cr_assert(tg_tuner_try_lock(&u, (uint32_t)holder->tid));
    pthread_t a, b;
    pthread_create(&a, NULL, first, NULL);
    cr_assert(until(first_queued), "the first waiter never queued");
    pthread_create(&b, NULL, second, NULL);
    pthread_join(a, NULL);
    cr_assert(atomic_load(&raised), "the signal check never ran with both waiting");
    cr_assert_eq(atomic_load(&first_rc), -1, "the first waiter's wait was abandoned");
    pthread_mutex_lock(&gil);
    const uint32_t word = __atomic_load_n(&atomic_load(&second_rec)->park, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&gil);
    pthread_join(b, NULL);
    cr_assert_eq(atomic_load(&second_rc), 1, "the second waiter entered");
    const double ms = (double)(atomic_load(&second_entered_ns) - abandon_ns) / 1e6;
    cr_log_info("the second waiter entered %.1f ms after the abandon", ms);
    cr_assert_neq(word, second_word, "the abandon did not wake the new head (it entered %.0f ms later)", ms);
    /* its own time-out is a second away: a prompt entry, with room for a loaded machine */
    cr_assert_lt(ms, 500.0, "the new head entered %.0f ms after the abandon", ms);
    cr_assert_eq(__atomic_load_n(&u.owner, __ATOMIC_ACQUIRE), 0);
    cr_assert_eq(u.waiters, 0);
}
