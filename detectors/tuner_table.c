/* The tuner table: open addressing over instance addresses.  See
 * tuner_table.h for the locking contract (GIL held). */
#include "detectors/tuner_table.h"
#include "core/options.h"

#include <string.h>

pthread_mutex_t tg_tuner_wait_mu = PTHREAD_MUTEX_INITIALIZER;

static struct tg_tuner table[TG_TUNER_SLOTS];

static inline unsigned slot_of(uintptr_t key)
{
    /* Objects are 16-byte aligned: drop those bits, then mix. */
    uint64_t h = (uint64_t)(key >> 4) * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 52) & (TG_TUNER_SLOTS - 1);
}

/* A slot whose tuner nobody is inside or waiting for is given back at the
 * last leave (TOMB), so a long job that creates tuners without end (Inductor
 * makes one per generated kernel) never fills the table: it holds only the
 * tuners in use.  TOMB keeps probe chains intact; get() reuses the first one. */
#define TOMB ((uintptr_t)1) /* never an object's address */

static void claim(struct tg_tuner *u, uintptr_t key)
{
    /* nocc, occupants and waiters are 0: a slot is given back only then. */
    u->key = key;
    u->overflow = 0;
    u->ticket_next = u->ticket_turn = 0;
    u->starving = 0; /* pinned is 0: given back only then */
    u->sessions = u->races = u->waits = u->wait_ns = 0;
}

struct tg_tuner *tg_tuner_get(uintptr_t key)
{
    struct tg_tuner *tomb = NULL;
    unsigned i = slot_of(key);
    for (unsigned probe = 0; probe < TG_TUNER_SLOTS; probe++, i = (i + 1) & (TG_TUNER_SLOTS - 1)) {
        struct tg_tuner *u = &table[i];
        if (u->key == key)
            return u;
        if (u->key == TOMB) {
            if (!tomb)
                tomb = u;
            continue;
        }
        if (u->key == 0) {
            claim(tomb ? tomb : u, key);
            return tomb ? tomb : u;
        }
    }
    if (tomb) {
        claim(tomb, key);
        return tomb;
    }
    return NULL;
}

/* t's slot in u.  The tid is compared too: a new thread can get the record
 * address of a thread that died inside (glibc reuses thread stacks and TLS). */
static struct tg_occupant *find_occ(struct tg_tuner *u, const struct tg_thread *t)
{
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        if (u->occ[i].thread == t && (!t || u->occ[i].tid == t->tid))
            return &u->occ[i];
    return NULL;
}

enum tg_verdict tg_tuner_decide(const struct tg_tuner *u, const struct tg_thread *t, int mode)
{
    if (u->nocc == 0)
        return mode == TG_MODE_SERIALIZE && u->starving && !tg_tuner_queue_empty(u) && t->nheld == 0 ? TG_WAIT
                                                                                                 : TG_FIRST;
    if (find_occ((struct tg_tuner *)u, t))
        return TG_NESTED;
    /* A thread that entered while every slot was taken has no slot, but its
     * own record says it is inside. */
    for (int i = 0; i < t->nheld && i < TG_MAX_HELD; i++)
        if (t->held[i] == (const void *)u)
            return TG_NESTED;
    return mode == TG_MODE_SERIALIZE ? TG_WAIT : TG_RACE;
}

struct tg_occupant *tg_tuner_enter(struct tg_tuner *u, struct tg_thread *t, void *tstate,
                                   const void *method, uint64_t now_ns, int nested)
{
    struct tg_occupant *o;
    if (nested) {
        o = find_occ(u, t);
        if (o)
            o->depth++;
        return o;
    }
    u->sessions++;
    o = find_occ(u, NULL);
    if (!o) {
        u->overflow++;
        u->nocc++;
        return NULL;
    }
    o->thread = t;
    o->tid = t->tid;
    o->ident = t->ident;
    o->tstate = tstate;
    o->depth = 1;
    o->entered_ns = now_ns;
    o->method = method;
    if (u->waiters > 0) {
        /* A waiter reads nocc under the mutex without the GIL. */
        pthread_mutex_lock(&tg_tuner_wait_mu);
        u->nocc++;
        pthread_mutex_unlock(&tg_tuner_wait_mu);
    } else {
        u->nocc++;
    }
    return o;
}

int tg_tuner_leave(struct tg_tuner *u, struct tg_thread *t)
{
    struct tg_occupant *o = find_occ(u, t);
    if (o && --o->depth > 0)
        return 0;
    if (o)
        memset(o, 0, sizeof *o);
    else if (u->overflow > 0)
        u->overflow--;
    if (u->waiters > 0) {
        /* Reason for the lock: a serialize waiter checks nocc under it without
         * the GIL; updating and signalling under it avoids a lost wake-up. */
        pthread_mutex_lock(&tg_tuner_wait_mu);
        if (--u->nocc == 0 && u->cond_ready)
            pthread_cond_broadcast(&u->cond);
        pthread_mutex_unlock(&tg_tuner_wait_mu);
    } else if (--u->nocc == 0 && tg_tuner_queue_empty(u)) {
        /* Nobody inside, nobody waiting or queued (a queued thread may be
         * running Python between two waits): give the slot back. */
        u->key = TOMB;
    }
    return 1;
}

/* Queue writes: under the mutex too while someone may read them without the
 * GIL (tg_tuner_must_wait in a waiter's cond loop). */
#define QUEUE_WRITE(u, stmt)                         \
    do {                                             \
        if ((u)->waiters > 0) {                      \
            pthread_mutex_lock(&tg_tuner_wait_mu);   \
            stmt;                                    \
            pthread_mutex_unlock(&tg_tuner_wait_mu); \
        } else {                                     \
            stmt;                                    \
        }                                            \
    } while (0)

uint32_t tg_tuner_take_ticket(struct tg_tuner *u)
{
    uint32_t ticket = u->ticket_next;
    QUEUE_WRITE(u, u->ticket_next = ticket + 1);
    return ticket;
}

void tg_tuner_passed_over(struct tg_tuner *u, uint64_t waited_ns)
{
    if (waited_ns >= TG_TUNER_STARVE_NS)
        u->starving = 1; /* read with the GIL only (tg_tuner_decide) */
}

void tg_tuner_served(struct tg_tuner *u, uint32_t ticket, int queued, uint64_t waited_ns)
{
    if (!queued)
        return; /* a thread inside another tuner: no ticket, no say on starving */
    if ((int32_t)(ticket - u->ticket_turn) >= 0)
        QUEUE_WRITE(u, u->ticket_turn = ticket + 1);
    /* pinned still counts the caller (it unpins after entering) */
    if (waited_ns < TG_TUNER_STARVE_NS || u->pinned <= 1)
        u->starving = 0;
}

void tg_tuner_pin(struct tg_tuner *u)
{
    u->pinned++;
}

void tg_tuner_unpin(struct tg_tuner *u)
{
    u->pinned--;
}

void tg_tuner_skip_head(struct tg_tuner *u, uint32_t turn)
{
    if (u->ticket_turn != turn || u->nocc > 0)
        return;
    if (u->waiters > 0) {
        pthread_mutex_lock(&tg_tuner_wait_mu);
        u->ticket_turn = turn + 1;
        if (u->cond_ready)
            pthread_cond_broadcast(&u->cond); /* the new head may be asleep */
        pthread_mutex_unlock(&tg_tuner_wait_mu);
    } else {
        u->ticket_turn = turn + 1;
    }
}

const struct tg_occupant *tg_tuner_other(const struct tg_tuner *u, const struct tg_thread *t)
{
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        const struct tg_occupant *o = &u->occ[i];
        if (o->thread && !(t && o->thread == t && o->tid == t->tid))
            return o;
    }
    return NULL;
}

struct tg_tuner *tg_tuner_next(int *cursor)
{
    while (*cursor < TG_TUNER_SLOTS) {
        struct tg_tuner *u = &table[(*cursor)++];
        if (u->key && u->key != TOMB)
            return u;
    }
    return NULL;
}

/* Depth-first over "occupant waits for tuner" edges; the graph is tiny (one
 * edge per waiting thread), so a bounded recursion is enough. */
static int cycle_from(struct tg_tuner *u, const struct tg_thread *t, struct tg_tuner **path, int depth, int max)
{
    if (depth >= max)
        return 0;
    path[depth] = u;
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        const struct tg_thread *h = u->occ[i].thread;
        if (!h)
            continue;
        if (h == t && u->occ[i].tid == t->tid)
            return depth + 1;
        struct tg_tuner *next = h->waiting_for;
        if (!next)
            continue;
        int seen = 0;
        for (int k = 0; k <= depth; k++)
            seen |= path[k] == next;
        if (seen)
            continue;
        int n = cycle_from(next, t, path, depth + 1, max);
        if (n)
            return n;
    }
    return 0;
}

int tg_tuner_wait_cycle(struct tg_tuner *u, const struct tg_thread *t, struct tg_tuner **path, int max)
{
    return cycle_from(u, t, path, 0, max);
}

int tg_tuner_reap(struct tg_tuner *u, int (*alive)(pid_t tid), pid_t *dead, unsigned long *dead_ident, int max)
{
    int n = 0;
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        struct tg_occupant *o = &u->occ[i];
        if (!o->thread || alive(o->tid))
            continue;
        if (n < max) {
            dead[n] = o->tid;
            dead_ident[n] = o->ident;
        }
        n++;
        memset(o, 0, sizeof *o);
        if (u->waiters > 0) {
            /* As in tg_tuner_leave: waiters read nocc under the mutex. */
            pthread_mutex_lock(&tg_tuner_wait_mu);
            if (--u->nocc == 0 && u->cond_ready)
                pthread_cond_broadcast(&u->cond);
            pthread_mutex_unlock(&tg_tuner_wait_mu);
        } else {
            u->nocc--;
        }
    }
    return n;
}

void tg_tuner_atfork_child(void)
{
    for (int i = 0; i < TG_TUNER_SLOTS; i++) {
        struct tg_tuner *u = &table[i];
        u->nocc = 0;
        u->overflow = 0;
        u->waiters = 0;
        u->ticket_next = u->ticket_turn = 0;
        u->starving = 0;
        u->pinned = 0;
        memset(u->occ, 0, sizeof u->occ);
        /* The next waiter initializes it again, on the monotonic clock its
         * deadlines use (a default cond here would time out at once). */
        u->cond_ready = 0;
    }
    pthread_mutex_init(&tg_tuner_wait_mu, NULL);
}
