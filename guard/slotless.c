/* Sessions without an occupant slot: more threads inside one tuner than
 * its entry has slots (TG_TUNER_MAX_OCC).  Such a session keeps its race
 * link on its own thread record (ovf_*, guard/session.c); the threads are
 * listed here so that a race another thread finds can link them too (the
 * occupant scans of guard/report_capture.c see slots only): a benchmarking
 * session without a slot reads the arguments any other call's return
 * clears.  Outermost sessions only; a session that does not fit the list
 * (TG_SLOTLESS_MAX at once) is linked only at its own entry.  Everything
 * here: GIL held, no allocation. */
#include "guard/guard_internal.h"

#include <string.h>

#define TG_SLOTLESS_MAX 64
static struct tg_slotless slotless[TG_SLOTLESS_MAX];
static int nslotless;

void tg__slotless_enter(struct tg_thread *t, uintptr_t inst, void *tstate, uint64_t entered)
{
    tg__gthread(t)->ovf_inst = inst;
    tg__gthread(t)->ovf_raced_tid = 0;
    if (nslotless == TG_SLOTLESS_MAX)
        return;
    slotless[nslotless++] = (struct tg_slotless){.t = t, .tid = t->tid, .inst = inst, .tstate = tstate,
                                                 .entered = entered};
}

void tg__slotless_leave(const struct tg_thread *t)
{
    for (int i = 0; i < nslotless; i++)
        if (slotless[i].t == t) {
            slotless[i] = slotless[--nslotless];
            return;
        }
}

const struct tg_slotless *tg__slotless_at(uintptr_t inst, int *cursor)
{
    while (*cursor < nslotless) {
        const struct tg_slotless *s = &slotless[(*cursor)++];
        if (s->inst == inst)
            return s;
    }
    return NULL;
}

const struct tg_slotless *tg__slotless_find(uintptr_t inst, pid_t tid, uint64_t entered)
{
    for (int i = 0; i < nslotless; i++)
        if (slotless[i].inst == inst && slotless[i].tid == tid && slotless[i].entered == entered)
            return &slotless[i];
    return NULL;
}

void tg__slotless_atfork_child(void)
{
    nslotless = 0;
}
