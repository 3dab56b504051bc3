/* serialize's graph of waits (tuner_table.h, tg_tuner_wait_cycle): an edge
 * from each waiting thread to the tuner it waits for (the thread's
 * waiting_for), and from each tuner to the threads inside it (its
 * occupants).
 *
 * Without the GIL two threads closing one cycle at once could each search
 * before the other's edge is there, and neither find it.  So a thread about
 * to wait adds its edge and searches under one table-wide lock, the graph
 * lock: of the threads of a cycle, the last to add its edge finds it, and
 * only that one.  Nobody else takes it (a wait that ends clears its edge
 * with a release store; occupants change under their entries' locks), so a
 * tuned call never meets it.  A tuner's occupants are read under its entry
 * lock, one entry at a time; a cycle found is confirmed with the locks of
 * every entry on it held at once, taken in address order (the one place
 * that holds two entry locks), before it is reported and broken. */
#include "detectors/tuner_table.h"

static uint32_t graph_lock_word;

static void graph_lock(void)
{
    if (tg_py.free_threaded)
        tg_word_lock(&graph_lock_word);
}

static void graph_unlock(void)
{
    if (tg_py.free_threaded)
        tg_word_unlock(&graph_lock_word);
}

static struct tg_tuner *waits_for(const struct tg_thread *h)
{
    return __atomic_load_n((struct tg_tuner *const *)&h->waiting_for, __ATOMIC_ACQUIRE);
}

/* u's occupants (thread, tid), copied under its entry lock. */
static int occupants(struct tg_tuner *u, const struct tg_thread **th, pid_t *tid)
{
    int n = 0;
    tg_tuner_entry_lock(u);
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
        if (u->occ[i].thread) {
            th[n] = u->occ[i].thread;
            tid[n++] = u->occ[i].tid;
        }
    tg_tuner_entry_unlock(u);
    return n;
}

/* Depth-first over "occupant waits for tuner" edges; the graph is tiny (one
 * edge per waiting thread), so a bounded recursion is enough. */
static int cycle_from(struct tg_tuner *u, const struct tg_thread *t, struct tg_tuner **path, int depth, int max)
{
    if (depth >= max)
        return 0;
    path[depth] = u;
    const struct tg_thread *th[TG_TUNER_MAX_OCC];
    pid_t tid[TG_TUNER_MAX_OCC];
    const int nocc = occupants(u, th, tid);
    for (int i = 0; i < nocc; i++) {
        const struct tg_thread *h = th[i];
        if (h == t && tid[i] == t->tid)
            return depth + 1;
        struct tg_tuner *next = waits_for(h);
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

/* Does u hold an occupant that is t (last) or waits for next?  u's lock held. */
static int holds_edge(const struct tg_tuner *u, const struct tg_thread *t, const struct tg_tuner *next)
{
    for (int i = 0; i < TG_TUNER_MAX_OCC; i++) {
        const struct tg_thread *h = u->occ[i].thread;
        if (h && (next ? waits_for(h) == next : h == t && u->occ[i].tid == t->tid))
            return 1;
    }
    return 0;
}

/* The cycle path[0..n) again, with every entry on it locked (address
 * order): each holds a thread waiting for the next, the last holds t. */
static int confirmed(struct tg_tuner **path, int n, const struct tg_thread *t)
{
    struct tg_tuner *order[16];
    for (int k = 0; k < n; k++) {
        int j = k;
        for (; j > 0 && (uintptr_t)order[j - 1] > (uintptr_t)path[k]; j--)
            order[j] = order[j - 1];
        order[j] = path[k];
    }
    for (int k = 0; k < n; k++)
        tg_tuner_entry_lock(order[k]);
    int ok = waits_for(t) == path[0];
    for (int k = 0; k < n && ok; k++)
        ok = holds_edge(path[k], t, k + 1 < n ? path[k + 1] : NULL);
    for (int k = n - 1; k >= 0; k--)
        tg_tuner_entry_unlock(order[k]);
    return ok;
}

int tg_tuner_wait_cycle(struct tg_tuner *u, struct tg_thread *t, struct tg_tuner **path, int max)
{
    if (max > 16)
        max = 16; /* confirmed()'s order[] */
    graph_lock();
    __atomic_store_n((struct tg_tuner **)&t->waiting_for, u, __ATOMIC_RELEASE);
    int n = cycle_from(u, t, path, 0, max);
    if (n && !confirmed(path, n, t))
        n = 0;
    graph_unlock();
    return n;
}

void tg_tuner_graph_atfork_child(void)
{
    graph_lock_word = 0;
}
