/* The Chrome trace-event timeline's file (trace=1; reports/trace.h,
 * docs/trace.md): creating it, the event formatting every writer uses, the
 * metadata that names its tracks (the process, threads, GPU streams), the
 * CUDA events drained into it from the recorder (reports/trace_rec.c), and
 * its end (close, fork, a fatal signal's flush).  The events the Python
 * side and CUPTI write through these are reports/trace_events.c.
 *
 * Everything is under the trace mutex (tg__trace_lock), except
 * tg_trace_signal_flush, which is async-signal-safe (one write(2) of the
 * buffer, skipped while a thread fills it), and the configuration calls of
 * the constructor.  Allocates nothing: the buffer and the file's state are
 * static. */
#include "reports/trace.h"
#include "reports/trace_internal.h"
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
void (*tg__trace_namer)(unsigned long, char *, int);
static const char *(*tg__fn_name)(unsigned);
static const char *(*tg__kernel_name)(unsigned long long, char *, size_t);
long tg__trace_cap = TG_TRACE_DEFAULT_CAP;
static char tg__path[TG_PROC_PATH_MAX];
static struct tg_proc_file tg__file;              /* under the mutex: 4 KB */
struct tg__trace_state tg__trace = {.fd = -1};
struct tg_w tg__trace_w;
/* What tg__trace.fd was opened on: the program may close it and reuse the
 * number (reports/own_fd.h); checked before each use. */
static struct tg_own_fd tg__tr_id = {-1, 0, 0};
static _Atomic int tg__filling;   /* 1 while tg__trace_w is being modified */

/* Tracks named in the file: threads (thread_name) and GPU streams. */
#define TG__NAMED 512
static pid_t tg__named[TG__NAMED];
static int tg__nnamed;
#define TG__GPU_TRACKS 256
static uint64_t tg__gpu_named[TG__GPU_TRACKS]; /* (dev + 1) << 32 | stream, named already */
static int tg__ngpu_named;

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
    tg__trace_cap = cap >= 0 ? cap : TG_TRACE_DEFAULT_CAP;
    /* Timestamps are CLOCK_MONOTONIC itself (system-wide since boot), so the
     * traces of several processes on one host line up when merged. */
    tg__trace.t0_ns = 0;
}

void tg_trace_set_namer(void (*namer)(unsigned long, char *, int))
{
    tg__trace_namer = namer;
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
    uint64_t rel = ns > tg__trace.t0_ns ? ns - tg__trace.t0_ns : 0;
    tg_w_u64(w, rel / 1000);
    uint64_t f = rel % 1000;
    char d[4] = {(char)('0' + f / 100), (char)('0' + f / 10 % 10), (char)('0' + f % 10), 0};
    tg_w_char(w, '.');
    tg_w_str(w, d);
}

/* {"ph":"X","pid":P,"tid":T,"ts":S  -- the caller adds the rest and calls tg__trace_ev_end */
void tg__trace_ev_start_pid(char ph, pid_t pid, pid_t tid, uint64_t ts_ns);
void tg__trace_ev_start(char ph, pid_t tid, uint64_t ts_ns)
{
    tg__trace_ev_start_pid(ph, tg__trace.pid, tid, ts_ns);
}
void tg__trace_ev_start_pid(char ph, pid_t pid, pid_t tid, uint64_t ts_ns)
{
    struct tg_w *w = &tg__trace_w;
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

void tg__trace_ev_end(void)
{
    tg_w_str(&tg__trace_w, "},\n");
    tg__trace.st.events++;
}

/* Set by tg__trace_args_open: the next key is the first of the args object (no comma). */
static int tg__arg_first;

static void key(const char *k)
{
    tg_w_str(&tg__trace_w, tg__arg_first ? "\"" : ",\"");
    tg__arg_first = 0;
    tg_w_str(&tg__trace_w, k);
    tg_w_str(&tg__trace_w, "\":");
}

void tg__trace_kv_str(const char *k, const char *v, size_t max)
{
    key(k);
    tg_w_json_str(&tg__trace_w, v, max);
}

void tg__trace_kv_u64(const char *k, uint64_t v)
{
    key(k);
    tg_w_u64(&tg__trace_w, v);
}

void tg__trace_kv_i64(const char *k, int64_t v)
{
    key(k);
    tg_w_i64(&tg__trace_w, v);
}

void tg__trace_kv_hex(const char *k, uint64_t v)
{
    key(k);
    tg_w_char(&tg__trace_w, '"');
    tg_w_hex(&tg__trace_w, v);
    tg_w_char(&tg__trace_w, '"');
}

/* ,"args":{  -- then kv_* for each key, tg__trace_args_close. */
void tg__trace_args_open(void)
{
    tg_w_str(&tg__trace_w, ",\"args\":{");
    tg__arg_first = 1;
}

void tg__trace_args_close(void)
{
    tg__arg_first = 0;
    tg_w_char(&tg__trace_w, '}');
}

static void meta_thread(pid_t tid, const char *name)
{
    tg__trace_ev_start('M', tid, 0);
    tg__trace_kv_str("name", "thread_name", 16);
    tg_w_str(&tg__trace_w, ",\"args\":{\"name\":");
    tg_w_json_str(&tg__trace_w, name, 64);
    tg_w_char(&tg__trace_w, '}');
    tg__trace_ev_end();
}

static int is_named(pid_t tid)
{
    for (int i = 0; i < tg__nnamed; i++)
        if (tg__named[i] == tid)
            return 1;
    return 0;
}

void tg__trace_name_thread_unlocked(pid_t tid, const char *name)
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
    tg__trace_ev_start('M', tg__trace.pid, 0);
    tg__trace_kv_str("name", "process_name", 16);
    tg_w_str(&tg__trace_w, ",\"args\":{\"name\":");
    tg_w_json_str(&tg__trace_w, cmd[0] ? cmd : "python", sizeof cmd);
    tg_w_char(&tg__trace_w, '}');
    tg__trace_ev_end();
}

/* The open trace file still ours, or opened again by its path (the same
 * file); else trace=1 is off, said once, and the lost number (the
 * program's now) never written nor closed.  Returns 0 when events may be
 * written. */
static int still_ours_unlocked(void)
{
    if (tg__trace.fd < 0 || tg_own_fd_ok(&tg__tr_id))
        return 0;
    tg__trace.fd = tg_own_fd_reopen(&tg__tr_id, tg__path, O_WRONLY | O_APPEND);
    tg__trace_w.fd = tg__trace.fd;
    if (tg__trace.fd >= 0)
        return 0;
    tg__warn("cannot write trace file %s (closed by the program, and no longer there); trace=1 is off", tg__path);
    tg__trace.failed = 1;
    tg__trace_w.failed = 1;
    return -1;
}

/* Open the file on first use in this process.  Returns 0 when events may be
 * written. */
int tg__trace_open_unlocked(void)
{
    pid_t pid = getpid();
    if (tg__trace.failed || tg__trace.closed)
        return -1;
    if (tg__trace.pid == pid)
        return still_ours_unlocked();
    /* A new file with the id of this process's reports (core/process.h),
     * never an existing one: a symlink or a FIFO planted there is left alone. */
    tg__file.ext = ".trace.json";
    int fd = tg_proc_create(&tg__file, 1, O_WRONLY) == 0 ? tg__file.fd : -1;
    snprintf(tg__path, sizeof tg__path, "%s", tg__file.path[0] ? tg__file.path : tg_proc_stem());
    if (fd < 0) {
        tg__warn("cannot write trace file %s (%s); trace=1 is off", tg__path, tg_proc_strerror(&tg__file));
        tg__trace.failed = 1;
        tg__path[0] = '\0';
        return -1;
    }
    tg_proc_note_taken(&tg__file);
    tg__trace.pid = pid;
    tg__trace.fd = fd;
    tg_own_fd_set(&tg__tr_id, fd);
    tg_w_init(&tg__trace_w, fd);
    tg_w_str(&tg__trace_w, "[\n");
    process_meta_unlocked();
    return 0;
}

void tg__trace_flush_unlocked(void)
{
    size_t len = tg__trace_w.len;
    if (tg_w_flush(&tg__trace_w) < 0 && !tg__trace.failed) {
        tg__warn("cannot write trace file %s (%s); trace=1 is off", tg__path, strerror(errno));
        tg__trace.failed = 1;
    }
    tg__trace.st.bytes += len;
}

/* Lock, mark the buffer busy for the signal path. */
void tg__trace_lock(void)
{
    pthread_mutex_lock(&tg__trace_mu);
    atomic_store_explicit(&tg__filling, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
}

void tg__trace_unlock(void)
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
    tg__trace_ev_start(kind == TG_CUDA_LAUNCH ? 'i' : 'X', e->tid, t0);
    if (kind == TG_CUDA_LAUNCH)
        tg_w_str(&tg__trace_w, ",\"s\":\"t\"");
    else {
        tg_w_str(&tg__trace_w, ",\"dur\":");
        uint64_t d = t1 > t0 ? t1 - t0 : 0;
        tg_w_u64(&tg__trace_w, d / 1000);
        tg_w_char(&tg__trace_w, '.');
        char dd[4] = {(char)('0' + d % 1000 / 100), (char)('0' + d % 100 / 10), (char)('0' + d % 10), 0};
        tg_w_str(&tg__trace_w, dd);
    }
    tg__trace_kv_str("name", fname, 48);
    tg__trace_kv_str("cat", "cuda", 8);
    tg__trace_args_open();
    tg__trace_kv_str("function", fname, 48);
    tg__trace_kv_i64("device", dev);
    tg__trace_kv_hex("stream", stream);
    if (func) {
        const char *k = kernel_of(func, may_ask_driver);
        if (k[0])
            tg__trace_kv_str("kernel", k, 96);
        else
            tg__trace_kv_hex("func", func);
    }
    tg__trace_args_close();
    tg__trace_ev_end();
}

/* Events that count against trace_cap: CUDA events and session begins. */
uint64_t tg__trace_capped_unlocked(void)
{
    return tg__trace.st.cuda_written + tg__trace.st.sessions_written;
}

/* One recorded CUDA event, handed over by the recorder (mutex held). */
static void emit_recorded_unlocked(const struct tg_trace_rec *e, void *arg)
{
    if ((long)tg__trace_capped_unlocked() >= tg__trace_cap) {
        tg__trace.st.cuda_dropped++;
        return;
    }
    tg__trace.st.cuda_written++;
    emit_cuda_unlocked(e, *(const int *)arg);
}

void tg__trace_drain_all_unlocked(int may_ask_driver)
{
    tg__trace.st.cuda_dropped += tg_trace_rec_drain(emit_recorded_unlocked, &may_ask_driver);
}

void tg__trace_gpu_track_unlocked(int dev, uint32_t stream)
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
        snprintf(name, sizeof name, "GPU %d (pid %ld)", dev, (long)tg__trace.pid);
        tg__trace_ev_start_pid('M', TG__GPU_PID + dev, 0, 0);
        tg__trace_kv_str("name", "process_name", 16);
        tg_w_str(&tg__trace_w, ",\"args\":{\"name\":");
        tg_w_json_str(&tg__trace_w, name, sizeof name);
        tg_w_char(&tg__trace_w, '}');
        tg__trace_ev_end();
    }
    tg__gpu_named[tg__ngpu_named++] = key;
    snprintf(name, sizeof name, "stream %u", stream);
    tg__trace_ev_start_pid('M', TG__GPU_PID + dev, (pid_t)stream, 0);
    tg__trace_kv_str("name", "thread_name", 16);
    tg_w_str(&tg__trace_w, ",\"args\":{\"name\":");
    tg_w_json_str(&tg__trace_w, name, sizeof name);
    tg_w_char(&tg__trace_w, '}');
    tg__trace_ev_end();
}

void tg_trace_close(void)
{
    if (!tg_trace_on)
        return;
    tg__trace_lock();
    int have_events = tg_trace_rec_pending();
    /* No file yet and nothing buffered: nothing to say, no file. */
    if (!tg__trace.closed && (tg__trace.pid == getpid() || have_events) && tg__trace_open_unlocked() == 0) {
        tg__trace_drain_all_unlocked(0); /* at exit the driver may be gone: cached names only */
        tg__trace_ev_start('i', tg__trace.pid, tg_mono_ns());
        tg_w_str(&tg__trace_w, ",\"s\":\"g\"");
        tg__trace_kv_str("name", "tunerguard trace end", 32);
        tg__trace_kv_str("cat", "tunerguard", 16);
        tg__trace_args_open();
        tg__trace_kv_u64("events_written", tg__trace.st.events + 1);
        tg__trace_kv_u64("cuda_events_written", tg__trace.st.cuda_written);
        tg__trace_kv_u64("cuda_events_dropped", tg__trace.st.cuda_dropped);
        tg__trace_kv_u64("sessions_written", tg__trace.st.sessions_written);
        tg__trace_kv_u64("sessions_dropped", tg__trace.st.sessions_dropped);
        tg__trace_kv_u64("cap", (uint64_t)tg__trace_cap);
        tg__trace_args_close();
        tg_w_str(&tg__trace_w, "}\n]\n");
        tg__trace.st.events++;
        tg__trace_flush_unlocked();
        close(tg__trace.fd);
        tg__trace.fd = -1;
    }
    tg__trace.closed = 1;
    tg__trace_unlock();
}

void tg_trace_signal_flush(void)
{
    if (!tg_trace_on || tg__trace.fd < 0 || tg__trace.pid != getpid())
        return;
    if (atomic_load_explicit(&tg__filling, memory_order_relaxed) || !tg_own_fd_ok(&tg__tr_id))
        return;
    tg_w_flush(&tg__trace_w);
}

void tg_trace_atfork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    tg__trace_mu = fresh;
    atomic_store(&tg__filling, 0);
    if (tg__trace.fd >= 0 && tg_own_fd_ok(&tg__tr_id))
        close(tg__trace.fd);
    tg__trace.fd = -1;
    tg__trace.pid = 0;
    tg__trace.closed = tg__trace.failed = 0;
    tg__trace.flow_id = 0;
    memset(&tg__trace.st, 0, sizeof tg__trace.st);
    tg__path[0] = '\0';
    tg__trace_w.len = 0;
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
    *out = tg__trace.st;
    pthread_mutex_unlock(&tg__trace_mu);
}

const char *tg_trace_path(void)
{
    return tg__trace.pid == getpid() ? tg__path : "";
}
