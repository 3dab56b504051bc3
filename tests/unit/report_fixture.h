/* Test fixtures for the report writers: deterministic reports (fixed pids,
 * tids, addresses and symbols) and helpers to read back what was written.
 * Header-only; included by tests/unit/test_report_*.c, test_sink.c and
 * the other tests that write reports into a scratch directory. */
#ifndef TG_REPORT_FIXTURE_H
#define TG_REPORT_FIXTURE_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports/report.h"
#include "core/log.h"
#include "core/process.h"

/* A fresh directory "/tmp/tg_<tag>_XXXXXX" written into dir (n bytes), and
 * $RANK unset (report names carry it). */
static inline void fx_scratch_dir(char *dir, size_t n, const char *tag)
{
    snprintf(dir, n, "/tmp/tg_%s_XXXXXX", tag);
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
    unsetenv("RANK");
}

/* From here on, this process's stderr goes into path (created, truncated),
 * as if the process had started with it (core/log.h: a file put on fd 2
 * later, not opened for appending, is the program's and never written). */
static inline void fx_capture_stderr(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0, "cannot create %s", path);
    dup2(fd, 2);
    close(fd);
    tg_log_note_start();
}

/* The file's text (its first 256 KiB), in a buffer the next call reuses;
 * fails the test when it cannot be opened. */
static inline char *fx_slurp(const char *path)
{
    static char buf[256 * 1024];
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "cannot read %s", path);
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    buf[got] = '\0';
    return buf;
}

/* Directory of this source file (the expected/ files live next to it). */
static inline const char *fx_srcdir(void)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    return dir;
}

static inline void fx_py(struct tg_thread_view *v, const char *func, const char *file, int line)
{
    struct tg_py_frame *f = &v->py[v->npy++];
    snprintf(f->func, sizeof f->func, "%s", func);
    snprintf(f->file, sizeof f->file, "%s", file);
    f->line = line;
}

/* A high-severity race: MainThread inside, benchmarking, blocked in
 * cuCtxSynchronize_v2 on device 0; Thread-3 entering, last launched on
 * device 1.  The entering thread's native
 * frames are symbolized (as tg_report_symbolize would), the inside thread's
 * come from its CUDA call and are left raw. */
static inline void fx_race_high(struct tg_report *r)
{
    memset(r, 0, sizeof *r);
    r->kind = TG_REPORT_RACE;
    r->seq = 1;
    r->pid = 41230;
    r->rank = -1;
    r->mode = "detect";
    r->high_severity = 1;
    snprintf(r->tuner_class, sizeof r->tuner_class, "triton.runtime.autotuner.Autotuner");
    snprintf(r->method, sizeof r->method, "Autotuner.run");
    snprintf(r->kernel, sizeof r->kernel, "matmul_kernel");
    r->instance = 0x7f3a1c2b4d10;
    r->ts_ns = 1000000000ull + 3200000ull;

    struct tg_thread_view *e = &r->entering;
    e->tid = 41277;
    e->ident = 139876543210;
    snprintf(e->name, sizeof e->name, "Thread-3");
    fx_py(e, "run", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 171);
    fx_py(e, "<lambda>", "/usr/lib/python3/site-packages/triton/runtime/jit.py", 330);
    fx_py(e, "forward", "model.py", 88);
    fx_py(e, "run", "/usr/lib/python3.11/threading.py", 975);
    e->nnative = 2;
    e->native[0] = (void *)0x7f3a10003a1c;
    e->native[1] = (void *)0x7f3a201b2c40;
    snprintf(e->native_where, sizeof e->native_where, "at entry");
    e->nsym = 2;
    snprintf(e->native_sym[0], TG_SYM_LEN, "tg_guard_call+0x1a (libtunerguard.so+0x3a1c)");
    snprintf(e->native_sym[1], TG_SYM_LEN, "_PyObject_MakeTpCall+0x90 (libpython3.11.so.1.0+0x1b2c40)");
    /* The entering thread drives another GPU: its last launch, on device 1. */
    e->has_cuda = 1;
    e->cuda.kind = TG_CUDA_LAUNCH;
    e->cuda.fn = 2;
    e->cuda.device = 1;
    e->cuda.stream = 0x55d0c0de0100;
    e->cuda.func = 0x55d0c0ffee40;
    e->cuda.t_enter = 1000000000ull + 1600000ull;
    e->cuda.t_exit = 1000000000ull + 1700000ull;
    snprintf(e->cuda_fn, sizeof e->cuda_fn, "cuLaunchKernelEx");
    snprintf(e->cuda_kernel, sizeof e->cuda_kernel, "matmul_kernel");

    struct tg_thread_view *in = &r->inside;
    in->tid = 41230;
    in->ident = 139876500000;
    snprintf(in->name, sizeof in->name, "MainThread");
    fx_py(in, "_bench", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 143);
    fx_py(in, "run", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 171);
    fx_py(in, "main", "train.py", 40);
    in->entered_ns = 1000000000ull;
    in->benchmarking = 1;
    in->launches = 12;
    in->syncs = 3;
    in->has_cuda = 1;
    in->cuda.kind = TG_CUDA_SYNC;
    in->cuda.fn = 7;
    in->cuda.inside = 1;
    in->cuda.device = 0;
    in->cuda.stream = 0;
    in->cuda.func = 0x55d0c0ffee00;
    in->cuda.t_enter = 1000000000ull + 3000000ull;
    in->cuda.nframes = 3;
    in->cuda.frames[0] = (void *)0x7f3a00001000;
    in->cuda.frames[1] = (void *)0x7f3a00002000;
    in->cuda.frames[2] = (void *)0x7f3a00003000;
    snprintf(in->cuda_fn, sizeof in->cuda_fn, "cuCtxSynchronize_v2");
    snprintf(in->cuda_kernel, sizeof in->cuda_kernel, "matmul_kernel");
}

/* A low-severity overlap in serialize mode: nothing benchmarking, no CUDA,
 * an unnamed thread, truncated Python stacks, raw native addresses. */
static inline void fx_race_low(struct tg_report *r)
{
    memset(r, 0, sizeof *r);
    r->kind = TG_REPORT_RACE;
    r->seq = 2;
    r->pid = 5001;
    r->rank = 3;
    r->mode = "serialize";
    r->serialized = 1;
    snprintf(r->tuner_class, sizeof r->tuner_class, "fla.ops.utils.cache.CachedAutotuner");
    snprintf(r->method, sizeof r->method, "CachedAutotuner.run");
    snprintf(r->kernel, sizeof r->kernel, "_l2norm_fwd");
    r->instance = 0x7f0000001000;
    r->ts_ns = 5000000000ull;

    struct tg_thread_view *e = &r->entering;
    e->tid = 5002;
    e->has_entry_device = 1; /* no CUDA call yet: the device it entered on */
    e->entry_device = 3;
    fx_py(e, "run", "/site/triton/runtime/autotuner.py", 171);
    fx_py(e, "run", "/site/fla/ops/utils/cache.py", 52);
    fx_py(e, "l2norm", "/site/fla/modules/l2norm.py", 19);
    e->py_truncated = 1;
    e->nnative = 1;
    e->native[0] = (void *)0x401234;
    snprintf(e->native_where, sizeof e->native_where, "at entry");

    struct tg_thread_view *in = &r->inside;
    in->tid = 5001;
    snprintf(in->name, sizeof in->name, "MainThread");
    in->entered_ns = 5000000000ull - 850;
    fx_py(in, "run", "/site/fla/ops/utils/cache.py", 52);
}

static inline void fx_replaced(struct tg_report *r)
{
    memset(r, 0, sizeof *r);
    r->kind = TG_REPORT_METHOD_REPLACED;
    r->seq = 3;
    r->pid = 777;
    r->rank = -1;
    r->mode = "detect";
    snprintf(r->tuner_class, sizeof r->tuner_class, "triton.runtime.autotuner.Autotuner");
    snprintf(r->method, sizeof r->method, "Autotuner.run");
    snprintf(r->replaced.qualname, sizeof r->replaced.qualname, "locked_run");
    snprintf(r->replaced.file, sizeof r->replaced.file, "patch.py");
    r->replaced.line = 12;
    struct tg_thread_view *e = &r->entering;
    e->tid = 777;
    snprintf(e->name, sizeof e->name, "MainThread");
    fx_py(e, "<module>", "patch.py", 12);
    fx_py(e, "<module>", "train.py", 3);
}

/* Write with fn into a fresh temporary file and return its contents
 * (malloc'd, NUL-terminated). */
static inline char *fx_capture(int (*fn)(int, const struct tg_report *), const struct tg_report *r,
                               int *rc)
{
    char path[] = "/tmp/tg_fx_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    unlink(path);
    *rc = fn(fd, r);
    off_t n = lseek(fd, 0, SEEK_END);
    char *buf = malloc((size_t)n + 1);
    cr_assert(pread(fd, buf, (size_t)n, 0) == n);
    buf[n] = '\0';
    close(fd);
    return buf;
}

static inline char *fx_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

#endif
