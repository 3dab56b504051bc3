/* See fatal.h.  Everything reachable from the handler is async-signal-safe:
 * write(2), open(2), read(2), close(2), getpid(2), gettid, clock_gettime,
 * sigaction(2), raise(3), the tg_w writer, libunwind's unw_backtrace (or
 * the pre-warmed glibc backtrace), plain reads of the tuner table, and
 * CPython's _Py_DumpTracebackThreads (written for faulthandler: reads frames
 * without the GIL, best effort). */
#include "reports/fatal.h"
#include "detectors/tuner_table.h"
#include "reports/native_stack.h"
#include "reports/report.h"
#include "reports/trace.h"
#include "reports/writer.h"
#include "core/log.h"
#include "core/clock.h"
#include "core/real_sym.h"
#include "core/process.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const int tg__fatal_sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
#define TG__NSIG (int)(sizeof tg__fatal_sigs / sizeof tg__fatal_sigs[0])
static struct sigaction tg__old[TG__NSIG];
static _Atomic int tg__installed;
static atomic_flag tg__in_handler = ATOMIC_FLAG_INIT;
static int tg__to_stderr;       /* text reports go to stderr (log_path=stderr, ...) */
static long tg__rank = -1;      /* tg_proc_rank(), -1: none */
static struct tg_proc_file tg__file; /* the handler's file (it runs once) */
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

static void capture(int sig, const void *info)
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
static int write_block(int fd)
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
static int write_jsonl(int fd)
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
    if (tg__rank >= 0)
        tg_w_i64(&w, tg__rank);
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
    capture(sig, siginfo);
    (void)write_block(fd);
}


/* The descriptor of the text report (ext ".txt") or the JSON Lines report
 * (".jsonl"), creating <stem>.<id><ext> (core/process.h: a new file, the id
 * of this process's other report files) if no report was written yet.
 * *opened = 1 when this function opened it.  -1: none (no JSON Lines with
 * log_path=stderr, or the file cannot be created). */
static int report_fd(int *opened, const char *ext)
{
    int txt, jsonl;
    int is_txt = strcmp(ext, ".txt") == 0;
    *opened = 0;
    tg_sink_signal_fds(&txt, &jsonl);
    if (is_txt && txt >= 0)
        return txt;
    if (!is_txt && jsonl >= 0)
        return jsonl;
    if (!is_txt && jsonl == -2)
        return -1; /* JSON Lines turned off after a failed write (a full disk): no new file now */
    if (tg__to_stderr)
        return is_txt && tg_log_stderr_ok() ? 2 : -1;
    tg__file.ext = ext;
    if (tg_proc_create(&tg__file, 1, O_RDWR | O_APPEND) < 0)
        return -1;
    *opened = 1;
    if (is_txt && tg_log_stderr_ok()) {
        struct tg_w note;
        tg_w_init(&note, 2);
        tg_w_str(&note, "tunerguard: fatal signal; report in ");
        tg_w_str(&note, tg__file.path);
        tg_w_char(&note, '\n');
        tg_w_flush(&note);
    }
    return tg__file.fd;
}

/* A record that a write could not take whole (a full disk): the file cut
 * back to where it began (start, from lseek), errno kept.  ftruncate(2) is
 * async-signal-safe.  Returns 1. */
static int cut_back(int fd, off_t start)
{
    int saved = errno;
    if (start >= 0 && ftruncate(fd, start) != 0) {
        /* nothing more to do */
    }
    errno = saved;
    return 1;
}

/* The thread writing the report (tg__in_handler's winner), and whether it
 * is done.  Threads that crash at the same time (several workers hitting
 * the same bad pointer) wait for it, a bounded while, before they chain:
 * the first of them to chain would otherwise kill the process in the
 * middle of the winner's capture, and the report was lost. */
static atomic_int tg__handler_tid;
static atomic_int tg__handler_done;
#define TG__WAIT_FOR_REPORT_MS 5000

static void handler(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    int saved = errno;
    int idx = 0;
    while (idx < TG__NSIG && tg__fatal_sigs[idx] != sig)
        idx++;
    const int me = (int)syscall(SYS_gettid);
    if (atomic_flag_test_and_set(&tg__in_handler)) {
        if (atomic_load(&tg__handler_tid) != me) { /* not a fault inside our own report: wait for it */
            const struct timespec tick = {0, 10 * 1000 * 1000};
            for (int ms = 0; ms < TG__WAIT_FOR_REPORT_MS && !atomic_load(&tg__handler_done); ms += 10)
                nanosleep(&tick, NULL); /* async-signal-safe */
        }
    } else {
        atomic_store(&tg__handler_tid, me);
        capture(sig, info);
        int opened;
        int fd = report_fd(&opened, ".txt");
        int err_ok = tg_log_stderr_ok(); /* fd 2 closed at start: the program's */
        off_t start = fd > 2 ? lseek(fd, 0, SEEK_END) : -1;
        if ((fd >= 0 || err_ok) && write_block(fd >= 0 ? fd : 2) < 0 && fd > 2 && cut_back(fd, start) && err_ok) {
            /* The file did not take it all (a full disk): the whole block on
             * stderr too, after one line that says why. */
            static const char why[] = "tunerguard: the fatal report could not be written in full to its file "
                                      "(a write failed); it follows here\n";
            if (tg_log_write_stderr(why, sizeof why - 1) == 0)
                write_block(2);
        }
        if (opened)
            close(fd);
        fd = report_fd(&opened, ".jsonl"); /* none with log_path=stderr, as for reports */
        if (fd >= 0) {
            /* A report line cut by this signal (lines over the writer's
             * buffer go out in pieces): end it, so the record stands on a
             * line of its own. */
            char last;
            off_t end = lseek(fd, 0, SEEK_END);
            if (end > 0 && pread(fd, &last, 1, end - 1) == 1 && last != '\n' && write(fd, "\n", 1) < 0) {
                /* nothing to do: the record follows anyway */
            }
            end = lseek(fd, 0, SEEK_END);
            if (write_jsonl(fd) < 0)
                cut_back(fd, end); /* a record cut short by a full disk: none */
        }
        if (opened)
            close(fd);
        tg_trace_signal_flush();
        atomic_store(&tg__handler_done, 1);
    }
    /* Chain: put the previous action back and let the signal arrive again. */
    if (idx < TG__NSIG)
        sigaction(sig, &tg__old[idx], NULL);
    else
        signal(sig, SIG_DFL);
    if (!info || info->si_code <= 0 || sig == SIGABRT)
        raise(sig);  /* sent (kill, raise, abort): blocked now, delivered on return */
    /* a hardware fault re-executes the faulting instruction on return */
    errno = saved;
}

void tg_fatal_set_context(const char *mode, uint64_t *seq)
{
    tg__mode = mode;
    tg__seq = seq;
}

int tg_fatal_install(int require_python)
{
    if (atomic_load(&tg__installed))
        return 0;
    tg__py_is_init = (int (*)(void))tg_real_sym(RTLD_DEFAULT, "Py_IsInitialized");
    if (require_python && !tg__py_is_init)
        return -1;
    tg__py_dump = (tg__dump_fn)tg_real_sym(RTLD_DEFAULT, "_Py_DumpTracebackThreads");
    tg__py_this_tstate = (void *(*)(void))tg_real_sym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    if (atomic_exchange(&tg__installed, 1))
        return 0;
    /* The facts now, outside the handler: there they are only read. */
    tg__rank = tg_proc_rank();
    tg__to_stderr = tg_proc_text_to_stderr();
    (void)tg_proc_stem();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* the alternate stack if the thread has one */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < TG__NSIG; i++)
        sigaction(tg__fatal_sigs[i], &sa, &tg__old[i]);
    return 1;
}
