/* Sessions without an occupant slot: more threads inside one tuner than
 * its entry has slots (TG_TUNER_MAX_OCC).  Such a session keeps its race
 * link on its own thread record (ovf_*, guard/session.c); the threads are
 * listed here so that a race another thread finds can link them too (the
 * occupant scans of guard/report_capture.c see slots only): a benchmarking
 * session without a slot reads the arguments any other call's return
 * clears.  Outermost sessions only; a session that does not fit the list
 * (TG_SLOTLESS_MAX at once) is linked only at its own entry.  Everything
 * here: any thread, no allocation; the list under slotless_mu (entering
 * and leaving threads change it while others read it, at once in a
 * free-threaded build), which no Python code and no wait runs under:
 * readers get copies. */
#include "guard/guard_internal.h"

#include <pthread.h>
#include <string.h>

static struct tg_slotless slotless[TG_SLOTLESS_MAX];
static int nslotless;
static pthread_mutex_t slotless_mu = PTHREAD_MUTEX_INITIALIZER;

void tg__slotless_enter(struct tg_thread *t, uintptr_t inst, void *tstate, uint64_t entered)
{
    tg__gthread(t)->ovf_inst = inst;
    tg__gthread(t)->ovf_raced_tid = 0;
    pthread_mutex_lock(&slotless_mu);
    if (nslotless < TG_SLOTLESS_MAX)
        slotless[nslotless++] = (struct tg_slotless){.t = t, .tid = t->tid, .inst = inst, .tstate = tstate,
                                                     .entered = entered};
    pthread_mutex_unlock(&slotless_mu);
}

void tg__slotless_leave(const struct tg_thread *t)
{
    pthread_mutex_lock(&slotless_mu);
    for (int i = 0; i < nslotless; i++)
        if (slotless[i].t == t) {
            slotless[i] = slotless[--nslotless];
            break;
        }
    pthread_mutex_unlock(&slotless_mu);
}

int tg__slotless_all(uintptr_t inst, struct tg_slotless *out, int max)
{
    int n = 0;
    pthread_mutex_lock(&slotless_mu);
    for (int i = 0; i < nslotless && n < max; i++)
        if (slotless[i].inst == inst)
            out[n++] = slotless[i];
    pthread_mutex_unlock(&slotless_mu);
    return n;
}

int tg__slotless_find(uintptr_t inst, pid_t tid, uint64_t entered, struct tg_slotless *out)
{
    int found = 0;
    pthread_mutex_lock(&slotless_mu);
    for (int i = 0; i < nslotless && !found; i++)
        if (slotless[i].inst == inst && slotless[i].tid == tid && slotless[i].entered == entered) {
            *out = slotless[i];
            found = 1;
        }
    pthread_mutex_unlock(&slotless_mu);
    return found;
}

void tg__slotless_atfork_child(void)
{
    pthread_mutex_init(&slotless_mu, NULL); /* a parent's thread may have held it at the fork */
    nslotless = 0;
}
