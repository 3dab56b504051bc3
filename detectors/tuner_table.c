/* The tuner table: open addressing over instance addresses.  See
 * tuner_table.h for the locking contract (the GIL; in a free-threaded build
 * the entry locks, and the table lock below).
 *
 * Without the GIL, the fields an entry lock guards are written with relaxed
 * atomic stores where a thread may read them without that lock (nocc,
 * occ_tid[], waiters, wq_head, overlaps: a hint, as an entering thread's
 * first look, the exit summary, the fatal-signal path), and read with
 * relaxed loads there; both are plain moves on x86-64. */
#include "detectors/tuner_table.h"
#include "core/options.h"

#include <string.h>

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
    return (int)(__atomic_load_n(&claimed_bits[i / 64], __ATOMIC_RELAXED) >> (i % 64) & 1);
}

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* An entry's key: read without any lock (every look-up), written under the
 * table lock (claim, give_back), published with release so that a thread
 * finding the key finds the entry's reset fields too. */
static inline uintptr_t key_of(const struct tg_tuner *u)
{
    return __atomic_load_n(&u->key, __ATOMIC_ACQUIRE);
}

/* The table lock: claims (nkeys, claimed_bits, a key written) and the idle
 * sweep; taken after a look-up missed, so once per tuner instance (and once
 * more after its entry was given back), never on a tuned call.  Taken
 * before an entry's lock, never while holding one.  With the GIL, a no-op
 * (tuner_table.h, "The entry lock"). */
static uint32_t table_lock_word;

static void table_lock(void)
{
    if (tg_py.free_threaded)
        tg_word_lock(&table_lock_word);
}

static void table_unlock(void)
{
    if (tg_py.free_threaded)
        tg_word_unlock(&table_lock_word);
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
static unsigned nkeys; /* slots with a key, in use or idle (the table lock) */

/* An entry's overlap count stays with its slot when the entry is given
 * back (tg_tuner_overlaps sums every slot, in use or not): moving it to a
 * process-wide total here wrote one line shared by every thread at each
 * last leave, which with threads entering a tuner in turn is every call. */
/* Table lock and u's entry lock held. */
static void give_back(struct tg_tuner *u)
{
    __atomic_store_n(&u->key, TOMB, __ATOMIC_RELEASE);
    nkeys--;
}

/* Without the entry lock a first look; with it, the answer. */
static int idle(const struct tg_tuner *u)
{
    const uintptr_t k = key_of(u);
    return k != 0 && k != TOMB && LD(u->nocc) == 0 && LD(u->waiters) == 0 &&
           __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) == 0;
}

/* Give u back if it is idle, looked at under its lock.  Table lock held. */
static void give_back_if_idle(struct tg_tuner *u)
{
    if (!idle(u))
        return;
    tg_tuner_entry_lock(u);
    if (idle(u))
        give_back(u);
    tg_tuner_entry_unlock(u);
}

/* Give back every idle entry: at a claim that finds the table three
 * quarters full (so at most once per quarter of the table's claims, unless
 * three quarters of it are in use at once).  A pointer to an entry is valid only
 * while someone is inside or waiting (tg_tuner_get's contract), so nobody
 * holds one to these.  Table lock held. */
static void sweep_idle(void)
{
    for (unsigned i = 0; i < TG_TUNER_SLOTS; i++)
        if (ever_claimed(i))
            give_back_if_idle(&table[i]);
}

/* Table lock held. */
static void claim(struct tg_tuner *u, uintptr_t key)
{
    /* nocc, occupants and waiters are 0: a slot is given back only then. */
    const unsigned i = (unsigned)(u - table);
    if (!ever_claimed(i))
        ST(claimed_bits[i / 64], LD(claimed_bits[i / 64]) | 1ull << (i % 64));
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
    __atomic_store_n(&u->key, key, __ATOMIC_RELEASE); /* last: found only reset */
}

/* The look-up that may claim: table lock held.  Why claims are not a bare
 * CAS on `key`: a claim reuses the first tomb on the key's chain, and two
 * threads claiming one key could then take two slots (one passed a slot
 * before it became a tomb, the other reused it): two entries, two locks,
 * for one tuner.  Under the table lock the chain changes under neither. */
static struct tg_tuner *get_locked(uintptr_t key)
{
    for (int pass = 0; pass < 2; pass++) {
        struct tg_tuner *tomb = NULL, *empty = NULL;
        unsigned i = slot_of(key);
        for (unsigned probe = 0; probe < TG_TUNER_SLOTS; probe++, i = (i + 1) & (TG_TUNER_SLOTS - 1)) {
            struct tg_tuner *u = &table[i];
            const uintptr_t k = key_of(u);
            if (k == key)
                return u;
            if (k == TOMB) {
                if (!tomb)
                    tomb = u;
                continue;
            }
            if (k == 0) {
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

static __attribute__((noinline, cold)) struct tg_tuner *get_claiming(uintptr_t key)
{
    table_lock();
    struct tg_tuner *u = get_locked(key);
    table_unlock();
    return u;
}

struct tg_tuner *tg_tuner_get(uintptr_t key)
{
    struct tg_tuner *u = tg_tuner_find(key); /* every call but a tuner's first */
    if (__builtin_expect(u != NULL, 1))
        return u;
    return get_claiming(key);
}

uint64_t tg_tuner_overlaps(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < TG_TUNER_SLOTS; i++)
        if (ever_claimed(i))
            n += LD(table[i].overlaps); /* given back or not (give_back) */
    return n;
}

struct tg_tuner *tg_tuner_find(uintptr_t key)
{
    unsigned i = slot_of(key);
    for (unsigned probe = 0; probe < TG_TUNER_SLOTS; probe++, i = (i + 1) & (TG_TUNER_SLOTS - 1)) {
        const uintptr_t k = key_of(&table[i]);
        if (k == key)
            return &table[i];
        if (k == 0) /* a slot's key never goes back to 0 (but at fork): the chain ends here */
            return NULL;
    }
    return NULL;
}

/* t's slot in u (t NULL: a free one), found through the directory: one line
 * read, then the one slot.  The tid is compared too: a new thread can get the
 * record address of a thread that died inside (glibc reuses thread stacks
 * and TLS).  Entry lock held, as in everything below that reads or writes
 * the occupants. */
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
    ST(u->occ_tid[o - u->occ], 0);
    __atomic_store_n(&u->occ_ev[o - u->occ], 0, __ATOMIC_RELAXED);
    memset(o, 0, sizeof *o);
}

/* Without the entry lock: nocc is a relaxed load (as stale as the verdict
 * is anyway once the call returns), t's own held[] is t's, and the lock a
 * CAS. */
enum tg_verdict tg_tuner_decide(struct tg_tuner *u, const struct tg_thread *t, int mode)
{
    if (mode == TG_MODE_SERIALIZE) {
        if (LD(u->nocc) > 0 && tg_tuner_is_inside(u, t))
            return TG_NESTED;
        return tg_tuner_try_lock(u, (uint32_t)t->tid) ? TG_FIRST : TG_WAIT;
    }
    if (LD(u->nocc) == 0)
        return TG_FIRST;
    if (tg_tuner_is_inside(u, t))
        return TG_NESTED;
    return TG_RACE;
}

static __attribute__((noinline)) int inside_by_slots(struct tg_tuner *u, const struct tg_thread *t)
{
    tg_tuner_entry_lock(u);
    const int in = find_occ(u, t) != NULL;
    tg_tuner_entry_unlock(u);
    return in;
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
    return inside_by_slots(u, t); /* more sessions than held[] keeps */
}

/* The functions every tuned call makes (enter, leave, unlock) test the build
 * once: with a GIL they run their body as it is (the entry lock would be a
 * no-op there, tuner_table.h), without one the same body under the entry
 * lock, out of line.  A build with a GIL pays a load and a branch. */
#define FREE_THREADED __builtin_expect(tg_py.free_threaded != 0, 0)

static inline __attribute__((always_inline)) struct tg_occupant *
enter_locked(struct tg_tuner *u, struct tg_thread *t, void *tstate, const void *method, uint64_t now_ns, int nested)
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
        ST(u->nocc, u->nocc + 1); /* without a slot: tg_tuner_overflow */
        return NULL;
    }
    o->thread = t;
    o->tid = t->tid;
    ST(u->occ_tid[o - u->occ], t->tid);
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
    ST(u->nocc, u->nocc + 1);
    return o;
}

static __attribute__((noinline)) struct tg_occupant *enter_ft(struct tg_tuner *u, struct tg_thread *t, void *tstate,
                                                              const void *method, uint64_t now_ns, int nested)
{
    tg_tuner_entry_lock(u);
    struct tg_occupant *o = enter_locked(u, t, tstate, method, now_ns, nested);
    tg_tuner_entry_unlock(u);
    return o;
}

struct tg_occupant *tg_tuner_enter(struct tg_tuner *u, struct tg_thread *t, void *tstate,
                                   const void *method, uint64_t now_ns, int nested)
{
    if (FREE_THREADED)
        return enter_ft(u, t, tstate, method, now_ns, nested);
    return enter_locked(u, t, tstate, method, now_ns, nested);
}

void tg_tuner_release_if_unused(struct tg_tuner *u)
{
    table_lock();
    give_back_if_idle(u);
    table_unlock();
}

int tg_tuner_leave(struct tg_tuner *u, struct tg_thread *t)
{
    return tg_tuner_leave_at(u, t, NULL);
}

static inline __attribute__((always_inline)) int leave_locked(struct tg_tuner *u, struct tg_thread *t,
                                                              struct tg_occupant *mine)
{
    struct tg_occupant *o = mine && mine->thread == t && mine->tid == t->tid ? mine : find_occ(u, t);
    if (o && --o->depth > 0)
        return 0;
    if (o)
        clear_occ(u, o);
    else if (tg_tuner_overflow(u) == 0)
        return 1; /* not counted in (a frame from before a fork): nothing to give back */
    ST(u->nocc, u->nocc - 1); /* the last one out leaves the entry idle, its key kept (sweep_idle) */
    return 1;
}

static __attribute__((noinline)) int leave_ft(struct tg_tuner *u, struct tg_thread *t, struct tg_occupant *mine)
{
    tg_tuner_entry_lock(u);
    const int last = leave_locked(u, t, mine);
    tg_tuner_entry_unlock(u);
    return last;
}

int tg_tuner_leave_at(struct tg_tuner *u, struct tg_thread *t, struct tg_occupant *mine)
{
    if (FREE_THREADED)
        return leave_ft(u, t, mine);
    return leave_locked(u, t, mine);
}

/* Entry lock held: the waiter an unlock wakes (handed the lock when u is
 * starving), the owner's word stored. */
static inline __attribute__((always_inline)) struct tg_thread *release_owner(struct tg_tuner *u)
{
    struct tg_thread *w = u->wq_head;
    if (w && __atomic_load_n(&u->starving, __ATOMIC_RELAXED))
        __atomic_store_n(&u->owner, (uint32_t)w->tid, __ATOMIC_RELEASE); /* hand-off */
    else
        __atomic_store_n(&u->owner, 0, __ATOMIC_RELEASE);
    return w;
}

static __attribute__((noinline)) struct tg_thread *unlock_ft(struct tg_tuner *u)
{
    tg_tuner_entry_lock(u);
    struct tg_thread *w = release_owner(u);
    tg_tuner_entry_unlock(u);
    return w;
}

struct tg_thread *tg_tuner_unlock(struct tg_tuner *u, const struct tg_thread *t)
{
    if (__atomic_load_n(&u->owner, __ATOMIC_RELAXED) != (uint32_t)t->tid)
        return NULL;
    if (FREE_THREADED)
        return unlock_ft(u); /* the FIFO's head, read with the store it decides */
    return release_owner(u);
}

void tg_tuner_wait_push(struct tg_tuner *u, struct tg_thread *t)
{
    tg_tuner_entry_lock(u);
    t->wait_next = NULL;
    if (u->wq_tail)
        u->wq_tail->wait_next = t;
    else
        __atomic_store_n(&u->wq_head, t, __ATOMIC_RELAXED); /* tg_tuner_is_head */
    u->wq_tail = t;
    ST(u->waiters, u->waiters + 1);
    tg_tuner_entry_unlock(u);
}

void tg_tuner_wait_remove(struct tg_tuner *u, struct tg_thread *t)
{
    tg_tuner_entry_lock(u);
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
        ST(u->waiters, u->waiters - 1);
        break;
    }
    tg_tuner_entry_unlock(u);
}

void tg_tuner_count_wait(struct tg_tuner *u, uint64_t wait_ns)
{
    tg_tuner_entry_lock(u);
    u->waits++;
    u->wait_ns += wait_ns;
    tg_tuner_entry_unlock(u);
}

const struct tg_occupant *tg_tuner_other(const struct tg_tuner *u, const struct tg_thread *t,
                                         struct tg_occupant *dst)
{
    struct tg_tuner *m = (struct tg_tuner *)u; /* the lock word only */
    const struct tg_occupant *o = NULL;
    tg_tuner_entry_lock(m);
    for (int i = 0; i < TG_TUNER_MAX_OCC && !o; i++)
        if (u->occ_tid[i] != 0 && !(t && u->occ_tid[i] == t->tid && u->occ[i].thread == t)) {
            *dst = u->occ[i];
            o = dst;
        }
    tg_tuner_entry_unlock(m);
    return o;
}

pid_t tg_tuner_other_tid(const struct tg_tuner *u, const struct tg_thread *t)
{
    struct tg_tuner *m = (struct tg_tuner *)u; /* the lock word only */
    pid_t tid = 0;
    tg_tuner_entry_lock(m);
    for (int i = 0; i < TG_TUNER_MAX_OCC && !tid; i++)
        if (u->occ_tid[i] != 0 && !(t && u->occ_tid[i] == t->tid && u->occ[i].thread == t))
            tid = u->occ_tid[i];
    tg_tuner_entry_unlock(m);
    return tid;
}

struct tg_tuner *tg_tuner_next(int *cursor)
{
    while (*cursor < TG_TUNER_SLOTS) {
        const unsigned i = (unsigned)(*cursor)++;
        if (!ever_claimed(i))
            continue;
        struct tg_tuner *u = &table[i];
        const uintptr_t k = key_of(u);
        if (k && k != TOMB)
            return u;
    }
    return NULL;
}

/* The predicate makes a syscall: it is asked without the entry lock, about
 * the tids the directory held (relaxed loads), and a slot is cleared under
 * the lock only if it still holds the tid found dead. */
int tg_tuner_reap(struct tg_tuner *u, int (*alive)(pid_t tid), pid_t *dead, unsigned long *dead_ident, int max,
                  struct tg_thread **wake)
{
    pid_t gone[TG_TUNER_MAX_OCC];
    int ngone = 0, n = 0;
    *wake = NULL;
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        const pid_t tid = LD(u->occ_tid[i]); /* the directory: one line for all */
        gone[i] = tid != 0 && !alive(tid) ? tid : 0;
        ngone += gone[i] != 0;
    }
    uint32_t owner = __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE);
    const int owner_gone = owner != 0 && !alive((pid_t)owner);
    if (!ngone && !owner_gone)
        return 0;
    tg_tuner_entry_lock(u);
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        struct tg_occupant *o = &u->occ[i];
        if (!gone[i] || u->occ_tid[i] != gone[i])
            continue;
        if (n < max) {
            dead[n] = o->tid;
            dead_ident[n] = o->ident;
        }
        n++;
        clear_occ(u, o);
        ST(u->nocc, u->nocc - 1);
    }
    /* Died holding the lock (inside, or handed it and gone before it ran),
     * if it still does: a held word changes only by release_owner, under
     * this lock. */
    if (owner_gone && __atomic_load_n(&u->owner, __ATOMIC_ACQUIRE) == owner)
        *wake = release_owner(u);
    tg_tuner_entry_unlock(u);
    return n;
}

void tg_tuner_atfork_child(void)
{
    table_lock_word = 0; /* as the entry locks below: their holders are not in the child */
    tg_tuner_graph_atfork_child();
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

