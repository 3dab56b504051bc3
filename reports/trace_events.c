/* The events of the trace file (trace=1; reports/trace.h, docs/trace.md)
 * that the Python side and CUPTI write: tuner sessions, serialize's
 * waits, races (an instant and an arrow from the thread inside to the
 * entering one), and GPU kernels (cupti=1: on a "GPU <dev>" track, with
 * the launch on the host thread and an arrow between).  The file, its
 * formatting and the CUDA events drained into it are reports/trace.c.
 *
 * Each event takes the trace mutex, and writes nothing when trace=1 is
 * off.  The session and wait calls run with the GIL held (a thread's name
 * is asked of Python outside the mutex); the GPU kernel's on CUPTI's
 * buffer thread.  Not signal-safe; allocates nothing. */
#include "reports/trace.h"
#include "reports/trace_internal.h"
#include "reports/tls.h"
#include "reports/report.h"
#include "reports/writer.h"
#include "core/clock.h"

#include <stdio.h>

/* The thread's own Python name, once (GIL held, outside the mutex). */
static void self_name(struct tg_thread *t, char *buf, int len)
{
    buf[0] = '\0';
    if (tg__self_named || !tg__trace_namer)
        return;
    t->busy++; /* Python code run for the name is not tunerguard's to see */
    tg__trace_namer(t->ident, buf, len);
    t->busy--;
    tg__self_named = 1;
}

/* ---- sessions, waits, races ------------------------------------------------------ */

void tg_trace_session_begin(struct tg_thread *t, const char *method, const char *kernel,
                            uintptr_t instance)
{
    if (!tg_trace_on)
        return;
    char name[64];
    self_name(t, name, sizeof name);
    uint64_t now = tg_mono_ns();
    int d = tg__sess_depth++;
    tg__trace_lock();
    int written = 0;
    if (tg__trace_open_unlocked() == 0 && d < 64) {
        if ((long)tg__trace_capped_unlocked() >= tg__trace_cap) {
            tg__trace.st.sessions_dropped++;
        } else {
            tg__trace_name_thread_unlocked(t->tid, name);
            tg__trace_ev_start('B', t->tid, now);
            char full[200];
            snprintf(full, sizeof full, "%s %s", method ? method : "?", kernel && kernel[0] ? kernel : "?");
            tg_w_str(&tg__trace_w, ",\"name\":");
            tg_w_json_str(&tg__trace_w, full, sizeof full);
            tg__trace_kv_str("cat", "autotune", 16);
            tg__trace_args_open();
            tg__trace_kv_hex("instance", instance);
            tg__trace_kv_str("kernel", kernel ? kernel : "?", 128);
            tg__trace_args_close();
            tg__trace_ev_end();
            written = 1;
            tg__trace.st.sessions_written++;
        }
    }
    if (d < 64) {
        if (written)
            tg__sess_bits |= 1ull << d;
        else
            tg__sess_bits &= ~(1ull << d);
    }
    tg__trace_unlock();
}

void tg_trace_session_end(const struct tg_thread *t)
{
    if (!tg_trace_on || tg__sess_depth <= 0)
        return;
    int d = --tg__sess_depth;
    uint64_t now = tg_mono_ns();
    tg__trace_lock();
    if (tg__trace_open_unlocked() == 0) {
        tg__trace_drain_all_unlocked(1);
        if (d < 64 && (tg__sess_bits >> d & 1)) {
            tg__trace_ev_start('E', t->tid, now);
            tg__trace_ev_end();
        }
        tg__trace_flush_unlocked();
    }
    tg__trace_unlock();
}

void tg_trace_wait_begin(struct tg_thread *t, pid_t holder_tid, uintptr_t instance)
{
    if (!tg_trace_on)
        return;
    char name[64];
    self_name(t, name, sizeof name);
    uint64_t now = tg_mono_ns();
    tg__trace_lock();
    if (tg__trace_open_unlocked() == 0) {
        tg__trace_name_thread_unlocked(t->tid, name);
        tg__trace_ev_start('B', t->tid, now);
        tg__trace_kv_str("name", "serialize wait", 32);
        tg__trace_kv_str("cat", "tunerguard", 16);
        tg__trace_args_open();
        tg__trace_kv_hex("instance", instance);
        tg__trace_kv_i64("holder_tid", holder_tid);
        tg__trace_args_close();
        tg__trace_ev_end();
        tg__trace_flush_unlocked();
    }
    tg__trace_unlock();
}

void tg_trace_wait_end(const struct tg_thread *t)
{
    if (!tg_trace_on)
        return;
    uint64_t now = tg_mono_ns();
    tg__trace_lock();
    if (tg__trace_open_unlocked() == 0) {
        tg__trace_ev_start('E', t->tid, now);
        tg__trace_ev_end();
        tg__trace_flush_unlocked();
    }
    tg__trace_unlock();
}

void tg_trace_race(const struct tg_report *r)
{
    if (!tg_trace_on)
        return;
    tg__trace_lock();
    if (tg__trace_open_unlocked() == 0) {
        tg__trace_name_thread_unlocked(r->entering.tid, r->entering.name);
        tg__trace_name_thread_unlocked(r->inside.tid, r->inside.name);
        tg__trace_drain_all_unlocked(1);
        uint64_t id = ++tg__trace.flow_id;
        tg__trace_ev_start('i', r->entering.tid, r->ts_ns);
        tg_w_str(&tg__trace_w, ",\"s\":\"t\"");
        tg__trace_kv_str("name", "race", 8);
        tg__trace_kv_str("cat", "tunerguard", 16);
        tg__trace_args_open();
        tg__trace_kv_u64("report", r->seq);
        tg__trace_kv_str("severity", r->high_severity ? "high" : "low", 8);
        tg__trace_kv_str("kernel", r->kernel, sizeof r->kernel);
        tg__trace_kv_str("method", r->method, sizeof r->method);
        tg__trace_kv_hex("instance", r->instance);
        tg__trace_kv_i64("inside_tid", r->inside.tid);
        tg__trace_kv_str("mode", r->mode ? r->mode : "?", 16);
        tg__trace_args_close();
        tg__trace_ev_end();
        /* the arrow: from the thread inside to the entering thread */
        tg__trace_ev_start('s', r->inside.tid, r->ts_ns);
        tg__trace_kv_str("name", "race", 8);
        tg__trace_kv_str("cat", "tunerguard", 16);
        tg__trace_kv_u64("id", id);
        tg__trace_ev_end();
        tg__trace_ev_start('f', r->entering.tid, r->ts_ns);
        tg_w_str(&tg__trace_w, ",\"bp\":\"e\"");
        tg__trace_kv_str("name", "race", 8);
        tg__trace_kv_str("cat", "tunerguard", 16);
        tg__trace_kv_u64("id", id);
        tg__trace_ev_end();
        tg__trace_flush_unlocked();
    }
    tg__trace_unlock();
}

/* ---- GPU kernels (cupti=1) -------------------------------------------------- */

static void w_dur(uint64_t t0, uint64_t t1)
{
    uint64_t d = t1 > t0 ? t1 - t0 : 0;
    tg_w_str(&tg__trace_w, ",\"dur\":");
    tg_w_u64(&tg__trace_w, d / 1000);
    char dd[5] = {'.', (char)('0' + d % 1000 / 100), (char)('0' + d % 100 / 10), (char)('0' + d % 10), 0};
    tg_w_str(&tg__trace_w, dd);
}

void tg_trace_gpu_kernel(pid_t host_tid, uint64_t launch0, uint64_t launch1, int dev, uint32_t stream,
                         uint64_t start, uint64_t end, uint32_t corr, const char *name)
{
    if (!tg_trace_on)
        return;
    tg__trace_lock();
    if (tg__trace_open_unlocked() == 0) {
        if (tg__trace_capped_unlocked() >= (uint64_t)tg__trace_cap) {
            tg__trace.st.cuda_dropped++;
        } else {
            tg__trace_gpu_track_unlocked(dev, stream);
            tg__trace_ev_start_pid('X', TG__GPU_PID + dev, (pid_t)stream, start);
            w_dur(start, end);
            tg__trace_kv_str("name", name, 128);
            tg__trace_kv_str("cat", "gpu", 8);
            tg__trace_args_open();
            tg__trace_kv_i64("device", dev);
            tg__trace_kv_u64("stream", stream);
            tg__trace_kv_u64("correlation", corr);
            if (host_tid)
                tg__trace_kv_i64("launched_by", host_tid);
            tg__trace_args_close();
            tg__trace_ev_end();
            tg__trace.st.cuda_written++;
            if (host_tid && launch0) {
                uint64_t id = ++tg__trace.flow_id;
                uint64_t l1 = launch1 > launch0 ? launch1 : launch0 + 1000;
                tg__trace_ev_start('X', host_tid, launch0);
                w_dur(launch0, l1);
                tg__trace_kv_str("name", "launch", 8);
                tg__trace_kv_str("cat", "gpu", 8);
                tg__trace_args_open();
                tg__trace_kv_str("kernel", name, 128);
                tg__trace_kv_u64("correlation", corr);
                tg__trace_args_close();
                tg__trace_ev_end();
                tg__trace_ev_start('s', host_tid, launch0);
                tg__trace_kv_str("name", "launch", 8);
                tg__trace_kv_str("cat", "gpu", 8);
                tg__trace_kv_u64("id", id);
                tg__trace_ev_end();
                tg__trace_ev_start_pid('f', TG__GPU_PID + dev, (pid_t)stream, start);
                tg_w_str(&tg__trace_w, ",\"bp\":\"e\"");
                tg__trace_kv_str("name", "launch", 8);
                tg__trace_kv_str("cat", "gpu", 8);
                tg__trace_kv_u64("id", id);
                tg__trace_ev_end();
            }
        }
        /* no flush: the buffer writes itself out when full, and at the next
         * session end, race or close */
    }
    tg__trace_unlock();
}
