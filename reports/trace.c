/* The Chrome trace-event timeline's writer: see trace.h and docs/trace.md.
 * The CUDA events it writes come from the recorder (reports/trace_rec.c),
 * drained here under the trace mutex. */
#include "reports/trace.h"
#include "reports/trace_rec.h"
#include "reports/own_fd.h"
#include "reports/tls.h"
#include "reports/report.h"
#include "reports/writer.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/process.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the writer side (under tg__trace_mu) ---------------------------------- */

static pthread_mutex_t tg__trace_mu = PTHREAD_MUTEX_INITIALIZER;
/* The next three: written at activation. */
static void (*tg__namer)(unsigned long, char *, int);
static const char *(*tg__fn_name)(unsigned);
static const char *(*tg__kernel_name)(unsigned long long, char *, size_t);
static long tg__cap = TG_TRACE_DEFAULT_CAP;
static char tg__path[TG_PROC_PATH_MAX];
static struct tg_proc_file tg__file;              /* under the mutex: 4 KB */
static struct {
    pid_t pid;                    /* process that owns the open file; 0: none */
    int fd;
    int failed;                   /* could not create/write: stop quietly */
    int closed;
    uint64_t t0_ns;               /* ts origin */
    uint64_t flow_id;
    struct tg_trace_stats st;
} tg__tr = {.fd = -1};
static struct tg_w tg__tw;
/* What tg__tr.fd was opened on: the program may close it and reuse the
 * number (reports/own_fd.h); checked before each use. */
static struct tg_own_fd tg__tr_id = {-1, 0, 0};
static _Atomic int tg__filling;   /* 1 while tg__tw is being modified */

#define TG__NAMED 512
static pid_t tg__named[TG__NAMED];
static int tg__nnamed;

/* Kernel names of launched functions, looked up at drain time. */
#define TG__KCACHE 256
static struct {
    uint64_t func;
    char name[96];
} tg__kcache[TG__KCACHE];

void tg_trace_configure(int on, long cap)
{
    if (tg_trace_on != (on != 0)) /* no write of 0 over 0: see tg_trace_on */
        tg_trace_on = on != 0;
    tg__cap = cap >= 0 ? cap : TG_TRACE_DEFAULT_CAP;
    /* Timestamps are CLOCK_MONOTONIC itself (system-wide since boot), so the
     * traces of several processes on one host line up when merged. */
    tg__tr.t0_ns = 0;
}

void tg_trace_set_namer(void (*namer)(unsigned long, char *, int))
{
    tg__namer = namer;
}

void tg_trace_set_cuda_names(const char *(*fn_name)(unsigned),
                             const char *(*kernel_name)(unsigned long long, char *, size_t))
{
    tg__fn_name = fn_name;
    tg__kernel_name = kernel_name;
}

/* ---- formatting (mutex held) ------------------------------------------------ */

static void w_ts(struct tg_w *w, uint64_t ns)
{
    uint64_t rel = ns > tg__tr.t0_ns ? ns - tg__tr.t0_ns : 0;
    tg_w_u64(w, rel / 1000);
    uint64_t f = rel % 1000;
    char d[4] = {(char)('0' + f / 100), (char)('0' + f / 10 % 10), (char)('0' + f % 10), 0};
    tg_w_char(w, '.');
    tg_w_str(w, d);
}

/* {"ph":"X","pid":P,"tid":T,"ts":S  -- the caller adds the rest and calls ev_end */
static void ev_start_pid(char ph, pid_t pid, pid_t tid, uint64_t ts_ns);
static void ev_start(char ph, pid_t tid, uint64_t ts_ns)
{
    ev_start_pid(ph, tg__tr.pid, tid, ts_ns);
}
static void ev_start_pid(char ph, pid_t pid, pid_t tid, uint64_t ts_ns)
{
    struct tg_w *w = &tg__tw;
    tg_w_str(w, "{\"ph\":\"");
    tg_w_char(w, ph);
    tg_w_str(w, "\",\"pid\":");
    tg_w_i64(w, pid);
    tg_w_str(w, ",\"tid\":");
    tg_w_i64(w, tid);
    if (ph != 'M') {
        tg_w_str(w, ",\"ts\":");
        w_ts(w, ts_ns);
    }
}

static void ev_end(void)
{
    tg_w_str(&tg__tw, "},\n");
    tg__tr.st.events++;
}

/* Set by args_open: the next key is the first of the args object (no comma). */
static int tg__arg_first;

static void key(const char *k)
{
    tg_w_str(&tg__tw, tg__arg_first ? "\"" : ",\"");
    tg__arg_first = 0;
    tg_w_str(&tg__tw, k);
    tg_w_str(&tg__tw, "\":");
}

static void kv_str(const char *k, const char *v, size_t max)
{
    key(k);
    tg_w_json_str(&tg__tw, v, max);
}

static void kv_u64(const char *k, uint64_t v)
{
    key(k);
    tg_w_u64(&tg__tw, v);
}

static void kv_i64(const char *k, int64_t v)
{
    key(k);
    tg_w_i64(&tg__tw, v);
}

static void kv_hex(const char *k, uint64_t v)
{
    key(k);
    tg_w_char(&tg__tw, '"');
    tg_w_hex(&tg__tw, v);
    tg_w_char(&tg__tw, '"');
}

/* ,"args":{  -- then kv_* for each key, args_close. */
static void args_open(void)
{
    tg_w_str(&tg__tw, ",\"args\":{");
    tg__arg_first = 1;
}

static void args_close(void)
{
    tg__arg_first = 0;
    tg_w_char(&tg__tw, '}');
}

static void meta_thread(pid_t tid, const char *name)
{
    ev_start('M', tid, 0);
    kv_str("name", "thread_name", 16);
    tg_w_str(&tg__tw, ",\"args\":{\"name\":");
    tg_w_json_str(&tg__tw, name, 64);
    tg_w_char(&tg__tw, '}');
    ev_end();
}

static int is_named(pid_t tid)
{
    for (int i = 0; i < tg__nnamed; i++)
        if (tg__named[i] == tid)
            return 1;
    return 0;
}

static void name_thread_unlocked(pid_t tid, const char *name)
{
    if (!name || !name[0] || tid <= 0 || is_named(tid) || tg__nnamed == TG__NAMED)
        return;
    tg__named[tg__nnamed++] = tid;
    meta_thread(tid, name);
}

static void process_meta_unlocked(void)
{
    char cmd[256] = "";
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, cmd, sizeof cmd - 1);
        close(fd);
        if (n > 0) {
            for (ssize_t i = 0; i < n; i++)
                if (cmd[i] == '\0')
                    cmd[i] = ' ';
            while (n > 0 && cmd[n - 1] == ' ')
                n--;
            cmd[n] = '\0';
        }
    }
    ev_start('M', tg__tr.pid, 0);
    kv_str("name", "process_name", 16);
    tg_w_str(&tg__tw, ",\"args\":{\"name\":");
    tg_w_json_str(&tg__tw, cmd[0] ? cmd : "python", sizeof cmd);
    tg_w_char(&tg__tw, '}');
    ev_end();
}

/* The open trace file still ours, or opened again by its path (the same
 * file); else trace=1 is off, said once, and the lost number (the
 * program's now) never written nor closed.  Returns 0 when events may be
 * written. */
static int still_ours_unlocked(void)
{
    if (tg__tr.fd < 0 || tg_own_fd_ok(&tg__tr_id))
        return 0;
    tg__tr.fd = tg_own_fd_reopen(&tg__tr_id, tg__path, O_WRONLY | O_APPEND);
    tg__tw.fd = tg__tr.fd;
    if (tg__tr.fd >= 0)
        return 0;
    tg__warn("cannot write trace file %s (closed by the program, and no longer there); trace=1 is off", tg__path);
    tg__tr.failed = 1;
    tg__tw.failed = 1;
    return -1;
}

/* Open the file on first use in this process.  Returns 0 when events may be
 * written. */
static int open_unlocked(void)
{
    pid_t pid = getpid();
    if (tg__tr.failed || tg__tr.closed)
        return -1;
    if (tg__tr.pid == pid)
        return still_ours_unlocked();
    /* A new file with the id of this process's reports (core/process.h),
     * never an existing one: a symlink or a FIFO planted there is left alone. */
    tg__file.ext = ".trace.json";
    int fd = tg_proc_create(&tg__file, 1, O_WRONLY) == 0 ? tg__file.fd : -1;
    snprintf(tg__path, sizeof tg__path, "%s", tg__file.path[0] ? tg__file.path : tg_proc_stem());
    if (fd < 0) {
        tg__warn("cannot write trace file %s (%s); trace=1 is off", tg__path, tg_proc_strerror(&tg__file));
        tg__tr.failed = 1;
        tg__path[0] = '\0';
        return -1;
    }
    tg_proc_note_taken(&tg__file);
    tg__tr.pid = pid;
    tg__tr.fd = fd;
    tg_own_fd_set(&tg__tr_id, fd);
    tg_w_init(&tg__tw, fd);
    tg_w_str(&tg__tw, "[\n");
    process_meta_unlocked();
    return 0;
}

static void flush_unlocked(void)
{
    size_t len = tg__tw.len;
    if (tg_w_flush(&tg__tw) < 0 && !tg__tr.failed) {
        tg__warn("cannot write trace file %s (%s); trace=1 is off", tg__path, strerror(errno));
        tg__tr.failed = 1;
    }
    tg__tr.st.bytes += len;
}

/* Lock, mark the buffer busy for the signal path. */
static void lock(void)
{
    pthread_mutex_lock(&tg__trace_mu);
    atomic_store_explicit(&tg__filling, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
}

static void unlock(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&tg__filling, 0, memory_order_relaxed);
    pthread_mutex_unlock(&tg__trace_mu);
}

/* ---- draining ------------------------------------------------------------------ */

static const char *kernel_of(uint64_t func, int may_ask_driver)
{
    if (!func)
        return "";
    unsigned k = (unsigned)((func >> 4) ^ (func >> 12)) % TG__KCACHE;
    if (tg__kcache[k].func == func)
        return tg__kcache[k].name;
    if (!may_ask_driver)
        return "";
    if (tg__kernel_name)
        tg__kernel_name(func, tg__kcache[k].name, sizeof tg__kcache[k].name);
    else
        tg__kcache[k].name[0] = '\0';
    tg__kcache[k].func = func;
    return tg__kcache[k].name;
}

static void emit_cuda_unlocked(const struct tg_trace_rec *e, int may_ask_driver)
{
    uint64_t t0 = e->t0, t1 = e->t1, stream = e->stream, func = e->func, meta = e->meta;
    unsigned fn = (unsigned)(meta & 0xffff);
    int kind = (int)(meta >> 16 & 0xff);
    int32_t dev = (int32_t)(uint32_t)(meta >> 32);
    const char *fname = tg__fn_name ? tg__fn_name(fn) : "?";
    ev_start(kind == TG_CUDA_LAUNCH ? 'i' : 'X', e->tid, t0);
    if (kind == TG_CUDA_LAUNCH)
        tg_w_str(&tg__tw, ",\"s\":\"t\"");
    else {
        tg_w_str(&tg__tw, ",\"dur\":");
        uint64_t d = t1 > t0 ? t1 - t0 : 0;
        tg_w_u64(&tg__tw, d / 1000);
        tg_w_char(&tg__tw, '.');
        char dd[4] = {(char)('0' + d % 1000 / 100), (char)('0' + d % 100 / 10), (char)('0' + d % 10), 0};
        tg_w_str(&tg__tw, dd);
    }
    kv_str("name", fname, 48);
    kv_str("cat", "cuda", 8);
    args_open();
    kv_str("function", fname, 48);
    kv_i64("device", dev);
    kv_hex("stream", stream);
    if (func) {
        const char *k = kernel_of(func, may_ask_driver);
        if (k[0])
            kv_str("kernel", k, 96);
        else
            kv_hex("func", func);
    }
    args_close();
    ev_end();
}

/* Events that count against trace_cap: CUDA events and session begins. */
static uint64_t capped_unlocked(void)
{
    return tg__tr.st.cuda_written + tg__tr.st.sessions_written;
}

/* One recorded CUDA event, handed over by the recorder (mutex held). */
static void emit_recorded_unlocked(const struct tg_trace_rec *e, void *arg)
{
    if ((long)capped_unlocked() >= tg__cap) {
        tg__tr.st.cuda_dropped++;
        return;
    }
    tg__tr.st.cuda_written++;
    emit_cuda_unlocked(e, *(const int *)arg);
}

static void drain_all_unlocked(int may_ask_driver)
{
    tg__tr.st.cuda_dropped += tg_trace_rec_drain(emit_recorded_unlocked, &may_ask_driver);
}

/* The thread's own Python name, once (GIL held, outside the mutex). */
static void self_name(struct tg_thread *t, char *buf, int len)
{
    buf[0] = '\0';
    if (tg__self_named || !tg__namer)
        return;
    t->busy++; /* Python code run for the name is not tunerguard's to see */
    tg__namer(t->ident, buf, len);
    t->busy--;
    tg__self_named = 1;
}

/* ---- events ------------------------------------------------------------------------ */


void tg_trace_session_begin(struct tg_thread *t, const char *method, const char *kernel,
                            uintptr_t instance)
{
    if (!tg_trace_on)
        return;
    char name[64];
    self_name(t, name, sizeof name);
    uint64_t now = tg_mono_ns();
    int d = tg__sess_depth++;
    lock();
    int written = 0;
    if (open_unlocked() == 0 && d < 64) {
        if ((long)capped_unlocked() >= tg__cap) {
            tg__tr.st.sessions_dropped++;
        } else {
            name_thread_unlocked(t->tid, name);
            ev_start('B', t->tid, now);
            char full[200];
            snprintf(full, sizeof full, "%s %s", method ? method : "?", kernel && kernel[0] ? kernel : "?");
            tg_w_str(&tg__tw, ",\"name\":");
            tg_w_json_str(&tg__tw, full, sizeof full);
            kv_str("cat", "autotune", 16);
            args_open();
            kv_hex("instance", instance);
            kv_str("kernel", kernel ? kernel : "?", 128);
            args_close();
            ev_end();
            written = 1;
            tg__tr.st.sessions_written++;
        }
    }
    if (d < 64) {
        if (written)
            tg__sess_bits |= 1ull << d;
        else
            tg__sess_bits &= ~(1ull << d);
    }
    unlock();
}

void tg_trace_session_end(const struct tg_thread *t)
{
    if (!tg_trace_on || tg__sess_depth <= 0)
        return;
    int d = --tg__sess_depth;
    uint64_t now = tg_mono_ns();
    lock();
    if (open_unlocked() == 0) {
        drain_all_unlocked(1);
        if (d < 64 && (tg__sess_bits >> d & 1)) {
            ev_start('E', t->tid, now);
            ev_end();
        }
        flush_unlocked();
    }
    unlock();
}

void tg_trace_wait_begin(struct tg_thread *t, pid_t holder_tid, uintptr_t instance)
{
    if (!tg_trace_on)
        return;
    char name[64];
    self_name(t, name, sizeof name);
    uint64_t now = tg_mono_ns();
    lock();
    if (open_unlocked() == 0) {
        name_thread_unlocked(t->tid, name);
        ev_start('B', t->tid, now);
        kv_str("name", "serialize wait", 32);
        kv_str("cat", "tunerguard", 16);
        args_open();
        kv_hex("instance", instance);
        kv_i64("holder_tid", holder_tid);
        args_close();
        ev_end();
        flush_unlocked();
    }
    unlock();
}

void tg_trace_wait_end(const struct tg_thread *t)
{
    if (!tg_trace_on)
        return;
    uint64_t now = tg_mono_ns();
    lock();
    if (open_unlocked() == 0) {
        ev_start('E', t->tid, now);
        ev_end();
        flush_unlocked();
    }
    unlock();
}

void tg_trace_race(const struct tg_report *r)
{
    if (!tg_trace_on)
        return;
    lock();
    if (open_unlocked() == 0) {
        name_thread_unlocked(r->entering.tid, r->entering.name);
        name_thread_unlocked(r->inside.tid, r->inside.name);
        drain_all_unlocked(1);
        uint64_t id = ++tg__tr.flow_id;
        ev_start('i', r->entering.tid, r->ts_ns);
        tg_w_str(&tg__tw, ",\"s\":\"t\"");
        kv_str("name", "race", 8);
        kv_str("cat", "tunerguard", 16);
        args_open();
        kv_u64("report", r->seq);
        kv_str("severity", r->high_severity ? "high" : "low", 8);
        kv_str("kernel", r->kernel, sizeof r->kernel);
        kv_str("method", r->method, sizeof r->method);
        kv_hex("instance", r->instance);
        kv_i64("inside_tid", r->inside.tid);
        kv_str("mode", r->mode ? r->mode : "?", 16);
        args_close();
        ev_end();
        /* the arrow: from the thread inside to the entering thread */
        ev_start('s', r->inside.tid, r->ts_ns);
        kv_str("name", "race", 8);
        kv_str("cat", "tunerguard", 16);
        kv_u64("id", id);
        ev_end();
        ev_start('f', r->entering.tid, r->ts_ns);
        tg_w_str(&tg__tw, ",\"bp\":\"e\"");
        kv_str("name", "race", 8);
        kv_str("cat", "tunerguard", 16);
        kv_u64("id", id);
        ev_end();
        flush_unlocked();
    }
    unlock();
}

/* ---- GPU kernels (cupti=1) -------------------------------------------------- */

#define TG__GPU_PID 1000000000  /* "GPU <dev>" processes: pid 1e9 + dev (above any Linux pid) */
#define TG__GPU_TRACKS 256
static uint64_t tg__gpu_named[TG__GPU_TRACKS]; /* (dev + 1) << 32 | stream, named already */
static int tg__ngpu_named;

static void w_dur(uint64_t t0, uint64_t t1)
{
    uint64_t d = t1 > t0 ? t1 - t0 : 0;
    tg_w_str(&tg__tw, ",\"dur\":");
    tg_w_u64(&tg__tw, d / 1000);
    char dd[5] = {'.', (char)('0' + d % 1000 / 100), (char)('0' + d % 100 / 10), (char)('0' + d % 10), 0};
    tg_w_str(&tg__tw, dd);
}

static void gpu_track_unlocked(int dev, uint32_t stream)
{
    uint64_t key = (uint64_t)(uint32_t)(dev + 1) << 32 | stream, devkey = (uint64_t)(uint32_t)(dev + 1) << 32 | 0xffffffffu;
    int have_dev = 0;
    for (int i = 0; i < tg__ngpu_named; i++) {
        if (tg__gpu_named[i] == key)
            return;
        have_dev |= tg__gpu_named[i] == devkey;
    }
    if (tg__ngpu_named + 2 > TG__GPU_TRACKS)
        return; /* unnamed tracks still work */
    char name[64];
    if (!have_dev) {
        tg__gpu_named[tg__ngpu_named++] = devkey;
        snprintf(name, sizeof name, "GPU %d (pid %ld)", dev, (long)tg__tr.pid);
        ev_start_pid('M', TG__GPU_PID + dev, 0, 0);
        kv_str("name", "process_name", 16);
        tg_w_str(&tg__tw, ",\"args\":{\"name\":");
        tg_w_json_str(&tg__tw, name, sizeof name);
        tg_w_char(&tg__tw, '}');
        ev_end();
    }
    tg__gpu_named[tg__ngpu_named++] = key;
    snprintf(name, sizeof name, "stream %u", stream);
    ev_start_pid('M', TG__GPU_PID + dev, (pid_t)stream, 0);
    kv_str("name", "thread_name", 16);
    tg_w_str(&tg__tw, ",\"args\":{\"name\":");
    tg_w_json_str(&tg__tw, name, sizeof name);
    tg_w_char(&tg__tw, '}');
    ev_end();
}

void tg_trace_gpu_kernel(pid_t host_tid, uint64_t launch0, uint64_t launch1, int dev, uint32_t stream,
                         uint64_t start, uint64_t end, uint32_t corr, const char *name)
{
    if (!tg_trace_on)
        return;
    lock();
    if (open_unlocked() == 0) {
        if (capped_unlocked() >= (uint64_t)tg__cap) {
            tg__tr.st.cuda_dropped++;
        } else {
            gpu_track_unlocked(dev, stream);
            ev_start_pid('X', TG__GPU_PID + dev, (pid_t)stream, start);
            w_dur(start, end);
            kv_str("name", name, 128);
            kv_str("cat", "gpu", 8);
            args_open();
            kv_i64("device", dev);
            kv_u64("stream", stream);
            kv_u64("correlation", corr);
            if (host_tid)
                kv_i64("launched_by", host_tid);
            args_close();
            ev_end();
            tg__tr.st.cuda_written++;
            if (host_tid && launch0) {
                uint64_t id = ++tg__tr.flow_id;
                uint64_t l1 = launch1 > launch0 ? launch1 : launch0 + 1000;
                ev_start('X', host_tid, launch0);
                w_dur(launch0, l1);
                kv_str("name", "launch", 8);
                kv_str("cat", "gpu", 8);
                args_open();
                kv_str("kernel", name, 128);
                kv_u64("correlation", corr);
                args_close();
                ev_end();
                ev_start('s', host_tid, launch0);
                kv_str("name", "launch", 8);
                kv_str("cat", "gpu", 8);
                kv_u64("id", id);
                ev_end();
                ev_start_pid('f', TG__GPU_PID + dev, (pid_t)stream, start);
                tg_w_str(&tg__tw, ",\"bp\":\"e\"");
                kv_str("name", "launch", 8);
                kv_str("cat", "gpu", 8);
                kv_u64("id", id);
                ev_end();
            }
        }
        /* no flush: the buffer writes itself out when full, and at the next
         * session end, race or close */
    }
    unlock();
}

void tg_trace_close(void)
{
    if (!tg_trace_on)
        return;
    lock();
    int have_events = tg_trace_rec_pending();
    /* No file yet and nothing buffered: nothing to say, no file. */
    if (!tg__tr.closed && (tg__tr.pid == getpid() || have_events) && open_unlocked() == 0) {
        drain_all_unlocked(0); /* at exit the driver may be gone: cached names only */
        ev_start('i', tg__tr.pid, tg_mono_ns());
        tg_w_str(&tg__tw, ",\"s\":\"g\"");
        kv_str("name", "tunerguard trace end", 32);
        kv_str("cat", "tunerguard", 16);
        args_open();
        kv_u64("events_written", tg__tr.st.events + 1);
        kv_u64("cuda_events_written", tg__tr.st.cuda_written);
        kv_u64("cuda_events_dropped", tg__tr.st.cuda_dropped);
        kv_u64("sessions_written", tg__tr.st.sessions_written);
        kv_u64("sessions_dropped", tg__tr.st.sessions_dropped);
        kv_u64("cap", (uint64_t)tg__cap);
        args_close();
        tg_w_str(&tg__tw, "}\n]\n");
        tg__tr.st.events++;
        flush_unlocked();
        close(tg__tr.fd);
        tg__tr.fd = -1;
    }
    tg__tr.closed = 1;
    unlock();
}

void tg_trace_signal_flush(void)
{
    if (!tg_trace_on || tg__tr.fd < 0 || tg__tr.pid != getpid())
        return;
    if (atomic_load_explicit(&tg__filling, memory_order_relaxed) || !tg_own_fd_ok(&tg__tr_id))
        return;
    tg_w_flush(&tg__tw);
}

void tg_trace_atfork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    tg__trace_mu = fresh;
    atomic_store(&tg__filling, 0);
    if (tg__tr.fd >= 0 && tg_own_fd_ok(&tg__tr_id))
        close(tg__tr.fd);
    tg__tr.fd = -1;
    tg__tr.pid = 0;
    tg__tr.closed = tg__tr.failed = 0;
    tg__tr.flow_id = 0;
    memset(&tg__tr.st, 0, sizeof tg__tr.st);
    tg__path[0] = '\0';
    tg__tw.len = 0;
    tg__nnamed = 0;
    tg__ngpu_named = 0;
    tg_trace_rec_atfork_child();
    tg__sess_depth = 0;
    tg__sess_bits = 0;
    tg__self_named = 0;
}

void tg_trace_get_stats(struct tg_trace_stats *out)
{
    pthread_mutex_lock(&tg__trace_mu);
    *out = tg__tr.st;
    pthread_mutex_unlock(&tg__trace_mu);
}

const char *tg_trace_path(void)
{
    return tg__tr.pid == getpid() ? tg__path : "";
}
