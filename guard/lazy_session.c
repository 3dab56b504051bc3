/* detect's lazy session: a tuned call's session, registered only once it
 * can matter.
 *
 * detect mode, a tuned call: with several threads calling the same kernels,
 * every entry and leave wrote the tuner's shared line (its occupant count
 * and directory) and found it last written by another thread's CPU: two
 * cache-line transfers a call, the most of what detect cost the steady state
 * (docs/benchmarks.md).  So an outermost call on a tuner
 * nobody is registered in, by a thread that is not tuning, of a tuner whose
 * tuning methods are guarded (they say when a thread tunes: a Triton version
 * whose names tunerguard knows, Inductor's), registers nothing: it reads
 * the tuner's entry (shared, unwritten while everyone takes this path) and
 * keeps the session on its own record (lazy_*).  It registers, as the
 * session it is, as soon as it can matter to another thread:
 *   - it enters a tuning method (a cold key: prune_configs, _bench, ...),
 *     or any other guarded call: before that call goes on;
 *   - it returns and some thread began tuning during the call (the tuning
 *     epoch moved): then it registers and makes the check at return a
 *     registered session makes (a tuner left while another thread
 *     benchmarks in it: the race seen at exit);
 *   - its own CUDA hooks see it benchmark (a second launch, a synchronize):
 *     they cannot register it (no GIL), so they publish it on the thread's
 *     slot of a registry, and the next thread to enter a tuner registers
 *     the published sessions inside that tuner for their threads (adoption);
 *     the owner registers at return if nobody did.
 * A thread that tunes is registered, so another thread entering that tuner
 * finds it (nocc > 0) and takes the registered path: the race at entry is
 * found and reported as before.  What is not seen: overlaps of tuned calls
 * (low severity: counted only at verbosity 0, and verbosity >= 1 takes the
 * registered path), and these sessions in the tuner block of a fatal-signal
 * report.  Options that act on sessions (trace, stress, isolate_tuning,
 * targets= tuners without marked tuning methods) take the registered path,
 * and so does, while the GIL is off, a tuner that keeps its call's
 * arguments on itself (Triton's Autotuner): its calls clear each other's
 * arguments on a tuned key too, so every overlap is a race there. */
#include "guard/guard_internal.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/options.h"
#include "core/thread_state.h"
#include "cuda/cuda_hooks.h"
#include "detectors/tuner_table.h"

#include <sched.h>
#include <stdint.h>

/* The registry of threads that have had an unregistered session: a slot
 * each, claimed at its first by an atomic increment (threads claim at once
 * in a free-threaded build), published by a release store of its thread
 * (t; NULL: claimed, not filled yet), never given back.  `evident` says
 * its current session showed benchmarking evidence in a CUDA hook (set by
 * the owner's hook without the GIL, cleared by the owner when the session
 * ends); lazy_evident counts the slots that say so, so that an entering
 * thread looks at the registry only while one does. */
#define TG_LAZY_SLOTS 256
struct lazy_slot {
    struct tg_thread *t;
    pid_t tid;                /* copied: the record is read only while it lives */
    _Atomic uint32_t evident;
} __attribute__((aligned(64))); /* each written by its own thread only */
static struct lazy_slot lazy_slots[TG_LAZY_SLOTS];
static int nlazy_slots;      /* claims made (atomic increments); may pass TG_LAZY_SLOTS */
_Atomic uint32_t tg__lazy_evident;

int tg__lazy_slot(struct tg_thread *t)
{
    if (__builtin_expect(tg__gthread(t)->lazy_slot <= 0, 0)) {
        int n;
        if (tg__gthread(t)->lazy_slot < 0 || (n = __atomic_fetch_add(&nlazy_slots, 1, __ATOMIC_RELAXED)) >= TG_LAZY_SLOTS) {
            tg__gthread(t)->lazy_slot = -1; /* the registry is full: this thread registers its sessions */
            return 0;
        }
        struct lazy_slot *qs = &lazy_slots[n];
        qs->tid = t->tid;
        __atomic_store_n(&qs->t, t, __ATOMIC_RELEASE); /* the slot filled first */
        tg__gthread(t)->lazy_slot = n + 1;
    }
    return 1;
}

/* The owner's session ended (or registered and ended): its slot no longer
 * speaks for it.  The owner (an exchange: its own hooks set the bit). */
void tg__lazy_clear(struct tg_thread *t)
{
    if (tg__gthread(t)->lazy_slot > 0 &&
        __builtin_expect(__atomic_load_n(&lazy_slots[tg__gthread(t)->lazy_slot - 1].evident, __ATOMIC_RELAXED), 0) &&
        __atomic_exchange_n(&lazy_slots[tg__gthread(t)->lazy_slot - 1].evident, 0, __ATOMIC_SEQ_CST))
        __atomic_fetch_sub(&tg__lazy_evident, 1, __ATOMIC_SEQ_CST);
}

void tg__lazy_evidence(struct tg_thread *t, uint8_t bit)
{
    if (tg__gthread(t)->lazy_slot <= 0)
        return;
    if (!__atomic_exchange_n(&lazy_slots[tg__gthread(t)->lazy_slot - 1].evident, 1, __ATOMIC_SEQ_CST))
        __atomic_fetch_add(&tg__lazy_evident, 1, __ATOMIC_SEQ_CST);
    /* Adopted meanwhile (lazy_adopt read the evidence fields before this
     * bit was set, maybe): mark the slot it was given, as a registered
     * session's hook does.  The adopter stores nheld after the slot. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&t->nheld, __ATOMIC_ACQUIRE) > 0)
        tg_tuner_mark_evidence(t, bit);
}

/* Thread a's unregistered session on inst becomes a registered one: an
 * occupant of its tuner since it entered, held as an outermost session is.
 * Called by a itself, or for it by a thread entering inst (lazy_adopt)
 * while a is blocked detached (in a CUDA call, say: its hooks read
 * lazy_inst and nheld, stored last).  Several may try at once (two
 * adopters, the owner at its return): the one that exchanges lazy_inst
 * from inst to TG_LAZY_CLAIMED registers; the owner that lost waits until
 * the winner has stored nheld (C calls only, short).  Returns 1 when
 * registered here, 2 when another thread registered it, 0 when the table
 * is full (the session then stays unguarded, lazy_inst put back).  An
 * attached thread. */
int tg__lazy_register(struct tg_thread *a, uintptr_t inst)
{
    uintptr_t want = inst;
    if (!__atomic_compare_exchange_n(&a->lazy_inst, &want, TG_LAZY_CLAIMED, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        if (a == tg__self())
            while (__atomic_load_n(&a->lazy_inst, __ATOMIC_ACQUIRE) == TG_LAZY_CLAIMED)
                sched_yield(); /* an adopter registering it: its nheld comes next */
        return 2;
    }
    struct tg_tuner *u = tg_tuner_get(inst);
    if (__builtin_expect(!u, 0)) {
        tg__table_full();
        __atomic_store_n(&a->lazy_inst, inst, __ATOMIC_RELEASE);
        return 0;
    }
    struct tg_occupant *o =
        tg_tuner_enter(u, a, tg__gthread(a)->lazy_tstate, tg__gthread(a)->lazy_g, tg__gthread(a)->lazy_t0, 0);
    a->held[0] = u;
    a->held_slot[0] = o ? (uint8_t)(o - u->occ) : 0xff;
    if (!o) /* more threads inside than u has slots: listed for the links (slotless.c) */
        tg__slotless_enter(a, inst, tg__gthread(a)->lazy_tstate, tg__gthread(a)->lazy_t0);
    __atomic_store_n(&a->nheld, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&a->lazy_inst, 0, __ATOMIC_RELEASE); /* after nheld: the owner that lost waits for this */
    return 1;
}

/* Before t enters inst while some unregistered session shows evidence: the
 * ones inside inst are registered for their threads, so that t's entry finds
 * them, with their evidence, as it finds any thread inside.  An attached
 * thread; lazy slots claimed meanwhile may be seen unfilled (skipped). */
__attribute__((cold, noinline)) void tg__lazy_adopt(uintptr_t inst, const struct tg_thread *t)
{
    int n = __atomic_load_n(&nlazy_slots, __ATOMIC_RELAXED);
    if (n > TG_LAZY_SLOTS)
        n = TG_LAZY_SLOTS;
    for (int i = 0; i < n; i++) {
        struct lazy_slot *q = &lazy_slots[i];
        struct tg_thread *qt = __atomic_load_n(&q->t, __ATOMIC_ACQUIRE);
        if (!qt || !__atomic_load_n(&q->evident, __ATOMIC_SEQ_CST) || qt == t)
            continue;
        if (!tg__tid_alive_cached(q->tid)) {
            /* died inside: nothing to register, and the count it held goes */
            if (__atomic_exchange_n(&q->evident, 0, __ATOMIC_SEQ_CST))
                __atomic_fetch_sub(&tg__lazy_evident, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (__atomic_load_n(&qt->lazy_inst, __ATOMIC_RELAXED) == inst)
            tg__lazy_register(qt, inst);
    }
}

/* An outermost call that registers nothing unless it must (above).  GIL
 * held. */
__attribute__((noinline)) int tg__lazy_call(struct tg_guard *g, struct tg_thread *t, PyObject *inst, PyObject *f,
                                            PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                            PyObject **resp, uint32_t *epochp)
{
    if (__builtin_expect(t->last.kind == TG_CUDA_NONE, 0))
        TG_OWN_SET(t->entry_device, tg_cuda_current_device()); /* as a registered entry (below) */
    TG_OWN_SET(t->session_launches, 0u);
    if (__builtin_expect(t->session_syncs | t->session_multi | (uint32_t)t->session_tuned, 0))
        TG_OWN_SET(t->session_syncs, 0u), TG_OWN_SET(t->session_multi, 0u), TG_OWN_SET(t->session_tuned, 0);
    const uint32_t epoch = __atomic_load_n(&tg__tuning_epoch, __ATOMIC_RELAXED);
    tg__gthread(t)->lazy_g = g;
    tg__gthread(t)->lazy_tstate = tg__entry_tstate();
    tg__gthread(t)->lazy_t0 = tg_ticks();
    __atomic_store_n(&t->lazy_inst, (uintptr_t)inst, __ATOMIC_RELEASE); /* its hooks count from here; lazy_* before it */
    t->depth++;
    const unsigned forks = tg__gthread(t)->forks;
    PyObject *res = *resp = tg__call_orig(g, f, args, nargs, kwnames);
    *epochp = epoch;
    if (__builtin_expect(tg__gthread(t)->forks != forks, 0))
        return 0; /* forked inside, and this is the child: its record was reset (core/thread_state.c) */
    if (__atomic_load_n(&t->lazy_inst, __ATOMIC_ACQUIRE) == (uintptr_t)inst) {
        /* Still unregistered: unless someone began tuning meanwhile, or its
         * own hooks saw it benchmark, nothing to look at and nothing to give
         * back.  Taken back by an exchange: an adopter may be claiming it
         * right now (then it is registered, below). */
        uintptr_t want = (uintptr_t)inst;
        if (__builtin_expect(__atomic_load_n(&tg__tuning_epoch, __ATOMIC_RELAXED) == epoch &&
                                 !__atomic_load_n(&lazy_slots[tg__gthread(t)->lazy_slot - 1].evident, __ATOMIC_RELAXED),
                             1) &&
            __atomic_compare_exchange_n(&t->lazy_inst, &want, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            t->depth--;
            return 0;
        }
        if (!tg__lazy_register(t, (uintptr_t)inst)) {
            tg__lazy_clear(t);
            t->depth--;
            return 0;
        }
    }
    while (__builtin_expect(__atomic_load_n(&t->lazy_inst, __ATOMIC_ACQUIRE) == TG_LAZY_CLAIMED, 0))
        sched_yield(); /* an adopter registering it: its nheld comes next */
    if (__atomic_load_n(&t->nheld, __ATOMIC_ACQUIRE) == 0) {
        tg__lazy_clear(t);
        t->depth--; /* registration found the table full: unguarded */
        return 0;
    }
    (void)res;
    return 1; /* registered, during the call or just now: the caller leaves as a registered session does */
}

/* fork child: the other threads are gone, their sessions too.  The forking
 * thread's slot stays its own. */
void tg__lazy_atfork_child(void)
{
    for (int i = 0; i < nlazy_slots && i < TG_LAZY_SLOTS; i++)
        __atomic_store_n(&lazy_slots[i].evident, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tg__lazy_evident, 0, __ATOMIC_RELAXED);
}

/* The tuner table is full (tg_tuner_get gave NULL): the call runs unguarded;
 * said once (an exchange).  Any attached thread. */
__attribute__((cold, noinline)) void tg__table_full(void)
{
    static int warned;
    if (!__atomic_load_n(&warned, __ATOMIC_RELAXED) && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) {
        tg__warn("more than %d tuners in use at once; the calls of the others run unguarded", TG_TUNER_SLOTS);
    }
}

