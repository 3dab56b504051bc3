/* The fatal report's content (reports/fatal.h): what is captured when a
 * fatal signal arrives (the receiving thread's native frames, each with
 * its module and offset from /proc/self/maps; the tuner it is inside) and
 * the two writings of that capture, the text block and the JSON Lines
 * record.  The handler that decides when and where they are written, and
 * chains, is reports/fatal.c.
 *
 * Everything reachable from tg__fatal_capture and the two writers is
 * async-signal-safe and allocates nothing: write(2), open(2), read(2),
 * close(2), getpid(2), gettid, clock_gettime, the tg_w writer, libunwind's
 * unw_backtrace (or the pre-warmed glibc backtrace), plain reads of the
 * tuner table, and CPython's _Py_DumpTracebackThreads (written for
 * faulthandler: reads frames without the GIL, best effort).  Not
 * reentrant: one static capture and static writers (the handler lets one
 * thread at a time in).  tg__fatal_resolve_python and tg_fatal_set_context
 * run before the handler is installed and are not signal-safe. */
#include "reports/fatal.h"
#include "reports/fatal_internal.h"
#include "detectors/tuner_table.h"
#include "reports/native_stack.h"
#include "reports/report.h"
#include "reports/writer.h"
#include "core/clock.h"
#include "core/real_sym.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *tg__mode;    /* "detect" | "serialize" | NULL (tg_fatal_set_context) */
static uint64_t *tg__seq;       /* the process's report counter, or NULL */

typedef const char *(*tg__dump_fn)(int fd, void *interp, void *tstate);
static tg__dump_fn tg__py_dump;
static void *(*tg__py_this_tstate)(void);
static int (*tg__py_is_init)(void);

static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    }
    return "signal";
}

/* ---- native frames with module+offset from /proc/self/maps ---------------- */

static uint64_t parse_hex(const char **p, const char *end)
{
    uint64_t v = 0;
    for (; *p < end; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            break;
        v = v << 4 | (uint64_t)d;
    }
    return v;
}

struct frame_mod {
    uint64_t off;
    char mod[96];               /* basename, "" if not found */
};

/* One maps line: "start-end perms offset dev inode   path". */
static void maps_line(const char *l, const char *end, void *const *pcs, int n, struct frame_mod *fm)
{
    const char *p = l;
    uint64_t start = parse_hex(&p, end);
    if (p >= end || *p != '-')
        return;
    p++;
    uint64_t stop = parse_hex(&p, end);
    while (p < end && *p == ' ')
        p++;
    while (p < end && *p != ' ')   /* perms */
        p++;
    while (p < end && *p == ' ')
        p++;
    uint64_t foff = parse_hex(&p, end);
    const char *path = NULL;
    for (int sp = 0; p < end; p++) { /* skip dev, inode */
        if (*p == ' ' && (p + 1 < end && p[1] != ' '))
            if (++sp == 3) {
                path = p + 1;
                break;
            }
    }
    if (!path || *path != '/')
        return;
    const char *base = path;
    for (const char *q = path; q < end; q++)
        if (*q == '/')
            base = q + 1;
    for (int i = 0; i < n; i++) {
        uint64_t pc = (uint64_t)(uintptr_t)pcs[i];
        if (fm[i].mod[0] || pc < start || pc >= stop)
            continue;
        size_t k = (size_t)(end - base) < sizeof fm[i].mod - 1 ? (size_t)(end - base) : sizeof fm[i].mod - 1;
        memcpy(fm[i].mod, base, k);
        fm[i].mod[k] = '\0';
        fm[i].off = pc - start + foff;
    }
}

static void resolve_modules(void *const *pcs, int n, struct frame_mod *fm)
{
    for (int i = 0; i < n; i++)
        fm[i].mod[0] = '\0';
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof buf - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        size_t s = 0;
        for (size_t i = 0; i < have; i++)
            if (buf[i] == '\n') {
                maps_line(buf + s, buf + i, pcs, n, fm);
                s = i + 1;
            }
        if (s == 0 && have == sizeof buf) /* an absurdly long line: drop it */
            s = have;
        memmove(buf, buf + s, have - s);
        have -= s;
    }
    close(fd);
}

/* ---- one capture per signal ------------------------------------------------- */

/* What both writers show.  Static, not on the stack: the handler runs on
 * one thread at a time (tg__in_handler) and may be on a small alternate
 * signal stack; the tests call the writers from one thread. */
static struct fatal_capture {
    int sig;
    const siginfo_t *info;
    pid_t pid, tid;
    uint64_t now_ns;
    int n;
    void *pcs[TG_MAX_NATIVE_FRAMES];
    struct frame_mod fm[TG_MAX_NATIVE_FRAMES];
} tg__cap;

void tg__fatal_capture(int sig, const void *info)
{
    struct fatal_capture *c = &tg__cap;
    c->sig = sig;
    c->info = info;
    c->pid = getpid();
    c->tid = (pid_t)syscall(SYS_gettid);
    c->now_ns = tg_ticks_to_ns(tg_ticks());
    c->n = tg_native_capture(c->pcs, TG_MAX_NATIVE_FRAMES, 0);
    resolve_modules(c->pcs, c->n, c->fm);
}

/* The innermost tuner the receiving thread is inside (of its sessions, the
 * one it entered last) and its slot there, or NULL.  Found through the
 * table, not the thread's held[] list, so it reads only what tg_tuner_enter
 * wrote.  The table's entries are never freed; a field read mid-update gives
 * a stale value, not a fault. */
static const struct tg_occupant *own_session(uintptr_t *inst)
{
    const struct tg_thread *self = tg__self();
    const struct tg_occupant *best = NULL;
    int cursor = 0;
    struct tg_tuner *u;
    *inst = 0;
    while (self && (u = tg_tuner_next(&cursor)) != NULL)
        for (int i = 0; i < TG_TUNER_MAX_OCC; i++)
            /* the tid too: a dead thread's record address may be ours now */
            if (u->occ[i].thread == self && u->occ[i].tid == self->tid &&
                (!best || u->occ[i].entered_ns >= best->entered_ns)) {
                best = &u->occ[i];
                *inst = u->key;
            }
    /* A tuned call in detect that registered nothing (guard/session.c, "The
     * unregistered session") keeps its instance on the thread's record. */
    if (!best && self)
        *inst = __atomic_load_n(&self->lazy_inst, __ATOMIC_RELAXED);
    return best;
}

/* ---- the block --------------------------------------------------------------- */

static void write_tuners(struct tg_w *w)
{
    int cursor = 0, any = 0;
    uint64_t now = tg__cap.now_ns;
    struct tg_tuner *u;
    while ((u = tg_tuner_next(&cursor)) != NULL) {
        int nocc = u->nocc, waiters = u->waiters;
        if (nocc <= 0 && waiters <= 0)
            continue;
        any = 1;
        tg_w_str(w, "    instance ");
        tg_w_hex(w, u->key);
        tg_w_str(w, ":");
        /* Occupant slots are not compacted (leaving and reaping clear a slot
         * in the middle), so every slot is looked at; and o->thread may be a
         * dead thread's record (reused since): only its being set is read,
         * the tid printed is the one copied at entry. */
        for (int i = 0, shown = 0; i < TG_TUNER_MAX_OCC; i++) {
            const struct tg_occupant *o = &u->occ[i];
            if (!o->thread)
                continue;
            tg_w_str(w, shown++ ? ";" : "");
            tg_w_str(w, " tid=");
            tg_w_i64(w, o->tid);
            tg_w_str(w, " inside for ");
            uint64_t in = tg_ticks_to_ns(o->entered_ns);
            tg_w_duration(w, now > in ? now - in : 0);
            tg_w_str(w, " (depth ");
            tg_w_i64(w, o->depth);
            if (o->race_seq) {
                tg_w_str(w, "; raced, report #");
                tg_w_u64(w, o->race_seq);
            }
            tg_w_char(w, ')');
        }
        if (nocc == 0)
            tg_w_str(w, " nobody inside");
        if (waiters > 0) {
            tg_w_str(w, ", ");
            tg_w_i64(w, waiters);
            tg_w_str(w, waiters == 1 ? " thread waiting" : " threads waiting");
        }
        tg_w_char(w, '\n');
    }
    if (!any)
        tg_w_str(w, "    (no thread is inside a tuner)\n");
}

/* -1 when a write failed (a full disk, a file-size limit): the block is cut. */
int tg__fatal_write_text(int fd)
{
    const struct fatal_capture *c = &tg__cap;
    const siginfo_t *info = c->info;
    int sig = c->sig, n = c->n;
    pid_t pid = c->pid, tid = c->tid;
    static struct tg_w w;      /* static: see tg__cap */
    tg_w_init(&w, fd);
    tg_w_str(&w, "==================\nWARNING: tunerguard: fatal signal ");
    tg_w_str(&w, sig_name(sig));
    tg_w_str(&w, " (pid=");
    tg_w_i64(&w, pid);
    tg_w_str(&w, ")\n  Received by thread tid=");
    tg_w_i64(&w, tid);
    if (info) {
        tg_w_str(&w, ", si_code=");
        tg_w_i64(&w, info->si_code);
        if (sig != SIGABRT && info->si_code > 0) {
            tg_w_str(&w, ", fault address ");
            tg_w_hex(&w, (uint64_t)(uintptr_t)info->si_addr);
        }
    }
    tg_w_str(&w, "\n\n  Native stack of tid=");
    tg_w_i64(&w, tid);
    tg_w_str(&w, " (innermost first, handler frames included):\n");
    void *const *pcs = c->pcs;
    const struct frame_mod *fm = c->fm;
    for (int i = 0; i < n; i++) {
        tg_w_str(&w, "    #");
        tg_w_i64(&w, i);
        tg_w_char(&w, ' ');
        tg_w_hex(&w, (uint64_t)(uintptr_t)pcs[i]);
        if (fm[i].mod[0]) {
            tg_w_str(&w, " (");
            tg_w_str(&w, fm[i].mod);
            tg_w_char(&w, '+');
            tg_w_hex(&w, fm[i].off);
            tg_w_char(&w, ')');
        }
        tg_w_char(&w, '\n');
    }
    if (n == 0)
        tg_w_str(&w, "    <no native stack: unwinder not loaded>\n");
    uintptr_t own;
    const struct tg_occupant *o = own_session(&own);
    if (own) {
        tg_w_str(&w, "\n  tid=");
        tg_w_i64(&w, tid);
        tg_w_str(&w, " was inside tuner instance ");
        tg_w_hex(&w, own);
        if (o && o->raced_tid) {
            tg_w_str(&w, " in a session that raced with thread '");
            tg_w_text(&w, o->raced_name, sizeof o->raced_name); /* escaped: a program string */
            tg_w_str(&w, "' (tid=");
            tg_w_i64(&w, o->raced_tid);
            if (o->race_seq) {
                tg_w_str(&w, "): race report #");
                tg_w_u64(&w, o->race_seq);
                tg_w_str(&w, " of this process");
            } else {
                tg_w_str(&w, "; no report of its own: a repeat or low severity)");
            }
        }
        tg_w_str(&w, ".\n");
    }
    tg_w_str(&w, "\n  Tuner state (who is inside which tuner):\n");
    write_tuners(&w);
    tg_w_str(&w, "\n  Python stacks of all threads (faulthandler format):\n");
    tg_w_flush(&w);
    if (tg__py_dump && tg__py_is_init && tg__py_is_init()) {
        void *ts = tg__py_this_tstate ? tg__py_this_tstate() : NULL;
        const char *err = tg__py_dump(fd, NULL, ts);
        if (err) {
            tg_w_str(&w, "  <");
            tg_w_str(&w, err);
            tg_w_str(&w, ">\n");
        }
    } else {
        tg_w_str(&w, "  <no Python interpreter running>\n");
    }
    tg_w_str(&w, "\nSUMMARY: tunerguard: fatal signal ");
    tg_w_str(&w, sig_name(sig));
    tg_w_str(&w, " in thread tid=");
    tg_w_i64(&w, tid);
    tg_w_str(&w, " (pid=");
    tg_w_i64(&w, pid);
    tg_w_str(&w, ")\n==================\n");
    return tg_w_flush(&w) < 0 || w.failed ? -1 : 0;
}

/* ---- the JSON line ------------------------------------------------------------ */

static void j_hex(struct tg_w *w, uint64_t v)
{
    tg_w_char(w, '"');
    tg_w_hex(w, v);
    tg_w_char(w, '"');
}

static void j_seq(struct tg_w *w, uint64_t seq)
{
    if (seq)
        tg_w_u64(w, seq);
    else
        tg_w_str(w, "null");
}

/* One "kind":"fatal" object (docs/report-schema.md), same capture as the
 * text block. */
int tg__fatal_write_jsonl(int fd, long rank)
{
    const struct fatal_capture *c = &tg__cap;
    static struct tg_w w;      /* static: see tg__cap */
    tg_w_init(&w, fd);
    uint64_t before = tg__seq ? __atomic_load_n(tg__seq, __ATOMIC_RELAXED) : 0;
    uint64_t seq = tg__seq ? __atomic_add_fetch(tg__seq, 1, __ATOMIC_RELAXED) : before + 1;
    tg_w_str(&w, "{\"schema\":");
    tg_w_u64(&w, TG_REPORT_SCHEMA_VERSION); /* one schema for every record of the file */
    tg_w_str(&w, ",\"kind\":\"fatal\",\"seq\":");
    tg_w_u64(&w, seq);
    tg_w_str(&w, ",\"pid\":");
    tg_w_i64(&w, c->pid);
    tg_w_str(&w, ",\"rank\":");
    if (rank >= 0)
        tg_w_i64(&w, rank);
    else
        tg_w_str(&w, "null");
    tg_w_str(&w, ",\"mode\":");
    if (tg__mode) {
        tg_w_char(&w, '"');
        tg_w_str(&w, tg__mode);
        tg_w_char(&w, '"');
    } else {
        tg_w_str(&w, "null");
    }
    tg_w_str(&w, ",\"ts_ns\":");
    tg_w_u64(&w, c->now_ns);
    tg_w_str(&w, ",\"wall_ns\":");
    tg_w_u64(&w, tg_wall_of_mono(c->now_ns));
    uintptr_t own;
    const struct tg_occupant *o = own_session(&own);
    tg_w_str(&w, ",\"tuner\":");
    if (own) {
        tg_w_str(&w, "{\"class\":null,\"method\":null,\"kernel\":null,\"declared\":null,\"instance\":");
        j_hex(&w, own);
        tg_w_char(&w, '}');
    } else {
        tg_w_str(&w, "null");
    }
    tg_w_str(&w, ",\"location\":null,\"entering\":null,\"signal\":\"");
    tg_w_str(&w, sig_name(c->sig));
    tg_w_str(&w, "\",\"signo\":");
    tg_w_i64(&w, c->sig);
    tg_w_str(&w, ",\"si_code\":");
    if (c->info)
        tg_w_i64(&w, c->info->si_code);
    else
        tg_w_str(&w, "null");
    tg_w_str(&w, ",\"fault_addr\":");
    if (c->info && c->sig != SIGABRT && c->info->si_code > 0)
        j_hex(&w, (uint64_t)(uintptr_t)c->info->si_addr);
    else
        tg_w_str(&w, "null");
    tg_w_str(&w, ",\"tid\":");
    tg_w_i64(&w, c->tid);
    tg_w_str(&w, ",\"native\":[");
    for (int i = 0; i < c->n; i++) {
        tg_w_str(&w, i ? ",{\"pc\":" : "{\"pc\":");
        j_hex(&w, (uint64_t)(uintptr_t)c->pcs[i]);
        tg_w_str(&w, ",\"symbol\":");
        if (c->fm[i].mod[0]) {  /* the text reports' unsymbolized shape: "?? (module+0xoff)" */
            static struct tg_w sym; /* formatted in its buffer, never flushed */
            tg_w_init(&sym, -1);
            tg_w_str(&sym, "?? (");
            tg_w_str(&sym, c->fm[i].mod);
            tg_w_char(&sym, '+');
            tg_w_hex(&sym, c->fm[i].off);
            tg_w_char(&sym, ')');
            tg_w_json_str(&w, sym.buf, sym.len);
        } else {
            tg_w_str(&w, "null");
        }
        tg_w_str(&w, ",\"mangled\":null,\"file\":null,\"line\":null}");
    }
    tg_w_str(&w, "],\"tuners\":[");
    int cursor = 0, any = 0;
    struct tg_tuner *u;
    while ((u = tg_tuner_next(&cursor)) != NULL) {
        int nocc = u->nocc, waiters = u->waiters;
        if (nocc <= 0 && waiters <= 0)
            continue;
        tg_w_str(&w, any++ ? ",{\"instance\":" : "{\"instance\":");
        j_hex(&w, u->key);
        tg_w_str(&w, ",\"occupants\":[");
        for (int i = 0, shown = 0; i < TG_TUNER_MAX_OCC; i++) {
            const struct tg_occupant *x = &u->occ[i];
            if (!x->thread)     /* as in write_tuners: the tid copied at entry */
                continue;
            tg_w_str(&w, shown++ ? ",{\"tid\":" : "{\"tid\":");
            tg_w_i64(&w, x->tid);
            uint64_t in = tg_ticks_to_ns(x->entered_ns);
            tg_w_str(&w, ",\"inside_ns\":");
            tg_w_u64(&w, c->now_ns > in ? c->now_ns - in : 0);
            tg_w_str(&w, ",\"depth\":");
            tg_w_i64(&w, x->depth);
            tg_w_str(&w, ",\"race_seq\":");
            j_seq(&w, x->race_seq);
            tg_w_char(&w, '}');
        }
        tg_w_str(&w, "],\"waiters\":");
        tg_w_i64(&w, waiters > 0 ? waiters : 0);
        tg_w_char(&w, '}');
    }
    tg_w_str(&w, "],\"race_seq\":");
    j_seq(&w, o ? o->race_seq : 0);
    tg_w_str(&w, ",\"reports_before\":");
    tg_w_u64(&w, before);
    tg_w_str(&w, "}\n");
    return tg_w_flush(&w);
}

void tg_fatal_write_block(int fd, int sig, const void *siginfo)
{
    tg__fatal_capture(sig, siginfo);
    (void)tg__fatal_write_text(fd);
}

void tg_fatal_set_context(const char *mode, uint64_t *seq)
{
    tg__mode = mode;
    tg__seq = seq;
}

int tg__fatal_resolve_python(int require_python)
{
    tg__py_is_init = (int (*)(void))tg_real_sym(RTLD_DEFAULT, "Py_IsInitialized");
    if (require_python && !tg__py_is_init)
        return -1;
    tg__py_dump = (tg__dump_fn)tg_real_sym(RTLD_DEFAULT, "_Py_DumpTracebackThreads");
    tg__py_this_tstate = (void *(*)(void))tg_real_sym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    return 0;
}
