/* The tuner table: open addressing over instance addresses.  See
 * tuner_table.h for the locking contract (GIL held). */
#include "detectors/tuner_table.h"
#include "core/options.h"

#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct tg_tuner table[TG_TUNER_SLOTS];

/* The entries ever claimed, one bit each: what the scans below (the fork
 * child's reset, the overlap total, tg_tuner_next) visit, so that they never
 * touch the rest of the 4.7 MB table.  A page of it the process never wrote
 * costs no memory until something reads it, and a read is not free either:
 * in a fork child (a DataLoader worker) it maps a page of the child's own
 * where the kernel gives no shared zero page, and the reset that wrote every
 * entry copied the whole table into each child.  Set once per entry (read
 * first: the line stays shared among the threads that claim). */
static uint64_t claimed_bits[TG_TUNER_SLOTS / 64];

static inline int ever_claimed(unsigned i)
{
    return (int)(claimed_bits[i / 64] >> (i % 64) & 1);
}

static inline unsigned slot_of(uintptr_t key)
{
    /* Objects are 16-byte aligned: drop those bits, then mix. */
    uint64_t h = (uint64_t)(key >> 4) * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 52) & (TG_TUNER_SLOTS - 1);
}

/* A slot keeps its key when its last occupant leaves (idle): threads that
 * call a tuner in turn find it at its home slot, in one probe, instead of
 * probing past a tomb and claiming a slot again at every call whose tuner
 * was empty (two more shared lines read, the key line written).  A long job
 * that creates tuners without end (Inductor makes one per generated kernel)
 * still never fills the table: when a claim would take it past three
 * quarters, the idle entries are given back first (TOMB; sweep_idle).
 * TOMB keeps probe chains intact; get() reuses the first one.  An idle
 * entry whose instance was freed and whose address a new tuner got is that
 * tuner's entry from then on, with the old one's counts (overlaps, serialize's
 * waits): statistics only, nobody is inside it. */
#define TOMB ((uintptr_t)1) /* never an object's address */
#define TG_TUNER_SWEEP_AT (TG_TUNER_SLOTS / 4 * 3)
static unsigned nkeys; /* slots with a key, in use or idle (GIL held) */

/* An entry's overlap count stays with its slot when the entry is given
 * back (tg_tuner_overlaps sums every slot, in use or not): moving it to a
 * process-wide total here wrote one line shared by every thread at each
 * last leave, which with threads entering a tuner in turn is every call. */
static void give_back(struct tg_tuner *u)
{
    u->key = TOMB;
    nkeys--;
}

static int idle(const struct tg_tuner *u)
{
    return u->key != 0 && u->key != TOMB && u->nocc == 0 && u->waiters == 0 &&
           __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) == 0;
}

/* Give back every idle entry: at a claim that finds the table three
 * quarters full (so at most once per quarter of the table's claims, unless
 * three quarters of it are in use at once).  A pointer to an entry is valid only
 * while someone is inside or waiting (tg_tuner_get's contract), so nobody
 * holds one to these. */
static void sweep_idle(void)
{
    for (unsigned i = 0; i < TG_TUNER_SLOTS; i++)
        if (ever_claimed(i) && idle(&table[i]))
            give_back(&table[i]);
}

static void claim(struct tg_tuner *u, uintptr_t key)
{
    /* nocc, occupants and waiters are 0: a slot is given back only then. */
    const unsigned i = (unsigned)(u - table);
    if (!ever_claimed(i))
        claimed_bits[i / 64] |= 1ull << (i % 64);
    u->key = key;
    nkeys++;
    /* What serialize keeps lies past the occupants, on lines detect never
     * writes; storing its zeros again on every claim would take those lines
     * from the CPU that claimed last (a cache miss each, at every call of a
     * tuner that threads enter in turn).  So they are read (shared, no
     * transfer while nobody writes them) and reset only when set. */
    if (u->starving | (uint32_t)u->noted | (u->waits != 0) | (u->wait_ns != 0)) {
        u->starving = 0; /* owner and the FIFO are empty: given back only then */
        u->waits = u->wait_ns = 0;
        u->noted = 0;
    }
}

struct tg_tuner *tg_tuner_get(uintptr_t key)
{
    for (int pass = 0; pass < 2; pass++) {
        struct tg_tuner *tomb = NULL, *empty = NULL;
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
                empty = u;
                break;
            }
        }
        /* A claim: sweep first when the table is filling up, then look again
         * (the sweep made tombs, maybe on this key's chain). */
        if (pass == 0 && nkeys >= TG_TUNER_SWEEP_AT) {
            sweep_idle();
            continue;
        }
        struct tg_tuner *u = tomb ? tomb : empty;
        if (u)
            claim(u, key);
        return u;
    }
    return NULL;
}

uint64_t tg_tuner_overlaps(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < TG_TUNER_SLOTS; i++)
        if (ever_claimed(i))
            n += table[i].overlaps; /* given back or not (give_back) */
    return n;
}

struct tg_tuner *tg_tuner_find(uintptr_t key)
{
    unsigned i = slot_of(key);
    for (unsigned probe = 0; probe < TG_TUNER_SLOTS; probe++, i = (i + 1) & (TG_TUNER_SLOTS - 1)) {
        if (table[i].key == key)
            return &table[i];
        if (table[i].key == 0)
            return NULL;
    }
    return NULL;
}

/* t's slot in u (t NULL: a free one), found through the directory: one line
 * read, then the one slot.  The tid is compared too: a new thread can get the
 * record address of a thread that died inside (glibc reuses thread stacks
 * and TLS). */
static struct tg_occupant *find_occ(struct tg_tuner *u, const struct tg_thread *t)
{
    const pid_t want = t ? t->tid : 0;
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        if (u->occ_tid[i] == want && u->occ[i].thread == t)
            return &u->occ[i];
    return NULL;
}

/* A free slot for t, looked for from one of its own (by its tid): a thread
 * that enters the tuner call after call then writes a slot whose line it
 * wrote last time, still in its own cache, instead of whichever slot the
 * first thread to enter left free. */
static struct tg_occupant *free_occ(struct tg_tuner *u, const struct tg_thread *t)
{
    const unsigned start = (unsigned)t->tid % TG_TUNER_MAX_OCC;
    for (unsigned k = 0; k < TG_TUNER_MAX_OCC; k++) {
        const unsigned i = (start + k) % TG_TUNER_MAX_OCC;
        if (u->occ_tid[i] == 0 && u->occ[i].thread == NULL)
            return &u->occ[i];
    }
    return NULL;
}

static void clear_occ(struct tg_tuner *u, struct tg_occupant *o)
{
    u->occ_tid[o - u->occ] = 0;
    __atomic_store_n(&u->occ_ev[o - u->occ], 0, __ATOMIC_RELAXED);
    memset(o, 0, sizeof *o);
}

enum tg_verdict tg_tuner_decide(struct tg_tuner *u, const struct tg_thread *t, int mode)
{
    if (mode == TG_MODE_SERIALIZE) {
        if (u->nocc > 0 && tg_tuner_is_inside(u, t))
            return TG_NESTED;
        return tg_tuner_try_lock(u, (uint32_t)t->tid) ? TG_FIRST : TG_WAIT;
    }
    if (u->nocc == 0)
        return TG_FIRST;
    if (tg_tuner_is_inside(u, t))
        return TG_NESTED;
    return TG_RACE;
}

int tg_tuner_is_inside(struct tg_tuner *u, const struct tg_thread *t)
{
    /* The thread's own record first: held[] lists every tuner whose session
     * it holds (entered before it is pushed, popped before it leaves), exact
     * while they fit.  Scanning u's occupants instead read a line of every
     * other thread inside, each written by its owner since this thread last
     * looked: a cache miss per thread on every contended entry. */
    for (int i = 0; i < t->nheld && i < TG_MAX_HELD; i++)
        if (t->held[i] == (const void *)u)
            return 1;
    if (t->nheld <= TG_MAX_HELD)
        return 0;
    return find_occ(u, t) != NULL; /* more sessions than held[] keeps */
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
    o = free_occ(u, t);
    if (!o) {
        u->nocc++; /* without a slot: tg_tuner_overflow */
        return NULL;
    }
    o->thread = t;
    o->tid = t->tid;
    u->occ_tid[o - u->occ] = t->tid;
    /* entered with it; untracked when t's held[] is full (its later evidence
     * cannot reach this slot: tg_tuner_mark_evidence) */
    __atomic_store_n(&u->occ_ev[o - u->occ],
                     (uint8_t)(tg_thread_evidence(t) | (t->nheld >= TG_MAX_HELD ? TG_EV_UNTRACKED : 0)),
                     __ATOMIC_RELAXED);
    o->ident = t->ident;
    o->tstate = tstate;
    o->depth = 1;
    o->entered_ns = now_ns;
    o->method = method;
    u->nocc++;
    return o;
}

void tg_tuner_release_if_unused(struct tg_tuner *u)
{
    if (u->key != 0 && u->key != TOMB && u->nocc == 0 && u->waiters == 0 &&
        __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) == 0)
        give_back(u);
}

int tg_tuner_leave(struct tg_tuner *u, struct tg_thread *t)
{
    return tg_tuner_leave_at(u, t, NULL);
}

int tg_tuner_leave_at(struct tg_tuner *u, struct tg_thread *t, struct tg_occupant *mine)
{
    struct tg_occupant *o = mine && mine->thread == t && mine->tid == t->tid ? mine : find_occ(u, t);
    if (o && --o->depth > 0)
        return 0;
    if (o)
        clear_occ(u, o);
    else if (tg_tuner_overflow(u) == 0)
        return 1; /* not counted in (a frame from before a fork): nothing to give back */
    --u->nocc; /* the last one out leaves the entry idle, its key kept (sweep_idle) */
    return 1;
}

struct tg_thread *tg_tuner_unlock(struct tg_tuner *u, const struct tg_thread *t)
{
    if (__atomic_load_n(&u->owner, __ATOMIC_RELAXED) != (uint32_t)t->tid)
        return NULL;
    struct tg_thread *w = u->wq_head;
    if (w && __atomic_load_n(&u->starving, __ATOMIC_RELAXED))
        __atomic_store_n(&u->owner, (uint32_t)w->tid, __ATOMIC_RELEASE); /* hand-off */
    else
        __atomic_store_n(&u->owner, 0, __ATOMIC_RELEASE);
    return w;
}

void tg_tuner_wait_push(struct tg_tuner *u, struct tg_thread *t)
{
    t->wait_next = NULL;
    if (u->wq_tail)
        u->wq_tail->wait_next = t;
    else
        __atomic_store_n(&u->wq_head, t, __ATOMIC_RELAXED); /* tg_tuner_is_head */
    u->wq_tail = t;
    u->waiters++;
}

void tg_tuner_wait_remove(struct tg_tuner *u, struct tg_thread *t)
{
    struct tg_thread *prev = NULL;
    for (struct tg_thread *w = u->wq_head; w; prev = w, w = w->wait_next) {
        if (w != t)
            continue;
        if (prev)
            prev->wait_next = w->wait_next;
        else
            __atomic_store_n(&u->wq_head, w->wait_next, __ATOMIC_RELAXED); /* tg_tuner_is_head */
        if (u->wq_tail == w)
            u->wq_tail = prev;
        w->wait_next = NULL;
        u->waiters--;
        return;
    }
}

const struct tg_occupant *tg_tuner_other(const struct tg_tuner *u, const struct tg_thread *t)
{
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        if (u->occ_tid[i] == 0 || (t && u->occ_tid[i] == t->tid && u->occ[i].thread == t))
            continue;
        return &u->occ[i];
    }
    return NULL;
}

struct tg_tuner *tg_tuner_next(int *cursor)
{
    while (*cursor < TG_TUNER_SLOTS) {
        const unsigned i = (unsigned)(*cursor)++;
        if (!ever_claimed(i))
            continue;
        struct tg_tuner *u = &table[i];
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

int tg_tuner_reap(struct tg_tuner *u, int (*alive)(pid_t tid), pid_t *dead, unsigned long *dead_ident, int max,
                  struct tg_thread **wake)
{
    int n = 0;
    *wake = NULL;
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        struct tg_occupant *o = &u->occ[i];
        if (u->occ_tid[i] == 0 || alive(u->occ_tid[i])) /* the directory: one line for all */
            continue;
        if (n < max) {
            dead[n] = o->tid;
            dead_ident[n] = o->ident;
        }
        n++;
        clear_occ(u, o);
        u->nocc--;
    }
    uint32_t owner = __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE);
    if (owner != 0 && !alive((pid_t)owner)) {
        /* Died holding the lock (inside, or handed it and gone before it ran). */
        struct tg_thread *w = u->wq_head;
        if (w && __atomic_load_n(&u->starving, __ATOMIC_RELAXED))
            __atomic_store_n(&u->owner, (uint32_t)w->tid, __ATOMIC_RELEASE);
        else
            __atomic_store_n(&u->owner, 0, __ATOMIC_RELEASE);
        *wake = w;
    }
    return n;
}

void tg_tuner_atfork_child(void)
{
    for (unsigned i = 0; i < TG_TUNER_SLOTS; i++) {
        struct tg_tuner *u = &table[i];
        if (!ever_claimed(i))
            continue; /* all zero already, and its page untouched (claimed_bits) */
        u->nocc = 0;
        u->lock = 0; /* a thread of the parent's may have held it: none is here */
        u->waiters = 0;
        u->wq_head = u->wq_tail = NULL;
        u->owner = 0;
        u->starving = 0;
        memset(u->occ, 0, sizeof u->occ);
        memset(u->occ_tid, 0, sizeof u->occ_tid);
        memset(u->occ_ev, 0, sizeof u->occ_ev);
        u->overlaps = 0; /* the parent's */
        u->waits = u->wait_ns = 0;
        u->noted = 0; /* the child's contended list starts empty (guard/serialize_wait.c) */
    }
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Drepper's three-state mutex ("Futexes Are Tricky", mutex 2) with a spin in
 * front: a holder keeps the word for a few stores, so a short spin usually
 * sees it free and never makes a syscall. */
void tg_tuner_entry_lock_slow(struct tg_tuner *u)
{
    for (int i = 0; i < TG_TUNER_LOCK_SPINS; i++) {
        uint32_t cur = __atomic_load_n(&u->lock, __ATOMIC_RELAXED);
        if (cur == 0 && __atomic_compare_exchange_n(&u->lock, &cur, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
        if (cur == 2)
            break; /* others park already: join them */
        cpu_relax();
    }
    /* 2: held, and the holder's unlock must wake someone.  Whoever takes it
     * here takes it as 2 too (it cannot tell whether others still park). */
    int saved = errno;
    while (__atomic_exchange_n(&u->lock, 2, __ATOMIC_ACQUIRE) != 0)
        syscall(SYS_futex, &u->lock, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    errno = saved;
}

void tg_tuner_entry_wake(struct tg_tuner *u)
{
    int saved = errno;
    syscall(SYS_futex, &u->lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}
