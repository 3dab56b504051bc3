/* A race seen again, decided before its capture.
 *
 * A tuner declared with targets= and called by several threads in a loop
 * overlaps on many calls, each a race (guard/race_decide.c,
 * tg__report_race); so does Triton's Autotuner without the GIL, whose every
 * call writes and clears its arguments on the shared object, tuned key or
 * not (a free-threaded build with the GIL off).  The report pipeline
 * de-duplicates them by the tuner instance and both threads' call sites
 * (reports/emit.c), but only after the report was captured: both stacks with
 * their names, the native stack, the thread names (Python code), the report
 * lock.  Here the same decision is made first, on a key no coarser than
 * emit's: the instance, its type and its kernel's name, the guard, both
 * threads, serialized or not, and every Python frame of both threads as (code object, last
 * instruction; the line on 3.9 and 3.10).  Without the GIL the thread
 * inside runs meanwhile, and holding it for each repeat would cost a wake
 * per repeat (docs/free-threading.md): its part of the key is its entry
 * record and its last CUDA call (guard/entry_record.c) instead of its
 * frames, a key as fine as emit's in the loops this serves (one call site,
 * one kernel), coarser where the thread inside reaches the tuner through
 * several paths from one call site.  And the pair of threads is left out
 * (emit's bug is the call sites, not the threads): a first capture waits
 * up to the parked read's bound for the other thread, and eight threads
 * calling two kernels met 112 pairs, each such a wait; a repeat then looks
 * up the two threads' names for the link itself.  Equal keys mean equal captured frames,
 * so emit would call the report a repeat of the one it wrote (or repeated)
 * for the first; that one's result is kept and the entry is counted as that
 * repeat (tg_emit_again), with the exception link the full report would have
 * made; a suppressed one is counted on its suppression again, neither
 * reported, counted as a race nor linked.  Stacks deeper than a report keeps
 * and verbosity=2 (every occurrence written) are not kept: those entries
 * take the full path.
 *
 * Everything here: an attached thread; `other` a copy of the occupant
 * (race_decide.c); Python code for the kernel's name and, in a repeat
 * without the GIL, the threads' names (attribute look-ups); allocates
 * nothing but the frame objects and names CPython hands out.  The cache,
 * which racing threads read and fill at once (a free-threaded build), is
 * under again_mu: a few compares and copies, no
 * Python code and no wait under it, taken at each race whose key is kept:
 * without the GIL, every overlap of an Autotuner's calls. */
#include "guard/guard_internal.h"
#include "reports/emit.h"
#include "reports/py_stack.h"
#include "reports/suppress_load.h"
#include "core/hash.h"
#include "core/py_attr.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define AGAIN_SLOTS 512 /* a power of two */

static struct again {
    uint64_t key;       /* 0: free */
    uint32_t ref;       /* the first report's dedup_ref */
    int supp;           /* or the suppression that matched it (its index + 1) */
    int serialized;
    char self_name[48]; /* the entering thread's name, for the link */
    char other_name[48];
} again[AGAIN_SLOTS];
static pthread_mutex_t again_mu = PTHREAD_MUTEX_INITIALIZER;

/* A word folded into h: spread over h first (a pointer's low bits are
 * alike), then one multiply by the hash's prime (core/hash.h). */
static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * TG_HASH_PRIME;
}

/* Fold thread state ts's Python frames (NULL: the calling thread's) into *h:
 * a walk (reports/py_stack.h) that reads the code's address and where in it
 * the frame is: its last instruction (PyFrame_GetLasti, 3.11+), a key finer
 * than the line a report shows and read without decoding the code's line
 * table (a walk from the code's start: a module's whole body for its
 * frame); the line where that function is not exported (3.9, 3.10).
 * 0 when the stack is deeper than a report keeps whole. */
static int fold_stack(void *ts, uint64_t *h)
{
    struct tg_py_walk walk;
    int n = 0, whole = 1;
    for (PyFrameObject *f = tg_py_walk_begin(&walk, ts); f; f = tg_py_walk_next(&walk)) {
        if (n++ == TG_MAX_PY_FRAMES) {
            whole = 0;
            break;
        }
        PyObject *code = tg_py.PyFrame_GetCode(f);
        const int at = tg_py.PyFrame_GetLasti ? tg_py.PyFrame_GetLasti(f) : tg_py.PyFrame_GetLineNumber(f);
        *h = mix(mix(*h, (uintptr_t)code), (uint64_t)(uint32_t)at);
        if (code)
            tg_py.Py_DecRef(code); /* alive: its frame holds it */
    }
    tg_py_walk_end(&walk);
    *h = mix(*h, (uint64_t)n);
    return whole;
}

uint64_t tg__race_key(PyObject *inst, const struct tg_guard *g, const struct tg_thread *t,
                      const struct tg_occupant *other, int serialized, int others_run)
{
    void *other_ts = tg__occupant_tstate(other);
    if (tg_opts.verbosity >= 2 || !other_ts)
        return 0;
    PyObject *et, *ev, *tb;
    tg_py.PyErr_Fetch(&et, &ev, &tb);
    if (others_run < 0)
        others_run = tg__others_run();
    PyObject *type = tg_py.PyObject_Type(inst); /* new reference */
    uint64_t h = mix(mix(TG_HASH_SEED, (uintptr_t)inst), (uintptr_t)type);
    if (type)
        tg_py.Py_DecRef(type); /* alive while inst is: only its address was wanted */
    h = mix(h, (uintptr_t)g);
    if (!others_run) /* with the GIL, the pair of threads: the names of the link are the first report's */
        h = mix(mix(h, (uint64_t)t->tid), (uint64_t)other->tid);
    h = mix(h, (uint64_t)(serialized != 0));
    /* The frames first, before any Python code runs: with a GIL the other
     * thread is blocked with it released, and code run here could let it
     * leave and end (its thread state freed). */
    int ok = fold_stack(NULL, &h);
    if (others_run) /* the other thread runs meanwhile: its frames are not read */
        tg__fold_entry(other->thread, &h, mix);
    else
        ok = ok && fold_stack(other_ts, &h);
    other_ts = NULL;
    /* Then the kernel's name, as emit keys on it: a tuner that died leaves
     * its address to the next one made, and without the pair of threads
     * nothing else would tell the two apart (attribute look-ups: Python
     * code may run, other threads with it). */
    char kernel[128];
    tg_py_kernel_name(inst, kernel, sizeof kernel);
    h = tg_hash_str(h, kernel);
    tg_py.PyErr_Restore(et, ev, tb);
    /* bit 0: a key; bit 1: made without the pair of threads (names looked up at each repeat) */
    return ok ? (h & ~3ull) | 1u | (others_run ? 2u : 0u) : 0;
}

/* again_mu held. */
static struct again *slot_of(uint64_t key, int want_free)
{
    unsigned i = (unsigned)(key >> 32) & (AGAIN_SLOTS - 1);
    for (unsigned probe = 0; probe < 16; probe++, i = (i + 1) & (AGAIN_SLOTS - 1)) {
        if (again[i].key == key || (want_free && again[i].key == 0))
            return &again[i];
        if (again[i].key == 0)
            return NULL;
    }
    return NULL; /* crowded: the full path */
}

int tg__race_again(uint64_t key, struct tg_thread *t, struct tg_tuner *u, const struct tg_occupant *other,
                   int serialized, struct tg_race_link *link)
{
    if (!key)
        return 0;
    pthread_mutex_lock(&again_mu);
    struct again *a = slot_of(key, 0);
    struct again copy;
    if (a)
        copy = *a;
    pthread_mutex_unlock(&again_mu);
    if (!a)
        return 0;
    if (copy.supp) {
        tg_supp_count_again(copy.supp);
        return 1;
    }
    tg_emit_again(copy.ref, TG_REPORT_RACE, 1, serialized);
    if (!serialized) { /* the link tg__report_race makes for a repeat (seq 0) */
        if (key & 2) { /* a key without the pair of threads: this pair's names (Python code) */
            tg_py_thread_name(t->ident, copy.self_name, sizeof copy.self_name);
            tg_py_thread_name(other->ident, copy.other_name, sizeof copy.other_name);
        }
        tg__link_session(u, other, t->tid, copy.self_name, 0); /* other is a copy: its slot */
        link->tid = other->tid;
        snprintf(link->name, sizeof link->name, "%s", copy.other_name);
        link->seq = 0;
    }
    return 1;
}

void tg__race_remember(uint64_t key, int serialized, uint32_t ref, int supp, const char *self_name,
                       const char *other_name)
{
    if (!key || !(ref || supp))
        return;
    pthread_mutex_lock(&again_mu);
    struct again *a = slot_of(key, 1);
    if (!a) {
        pthread_mutex_unlock(&again_mu);
        return;
    }
    a->key = key;
    a->ref = ref;
    a->supp = supp;
    a->serialized = serialized;
    snprintf(a->self_name, sizeof a->self_name, "%s", self_name);
    snprintf(a->other_name, sizeof a->other_name, "%s", other_name);
    pthread_mutex_unlock(&again_mu);
}

void tg__race_again_atfork_child(void)
{
    pthread_mutex_init(&again_mu, NULL); /* a parent's thread may have held it at the fork */
    memset(again, 0, sizeof again);      /* emit's slots are gone too */
}
