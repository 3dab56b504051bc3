/* Helpers shared by the report writers (text_report.c, jsonl_report.c) and
 * tg_report_symbolize().  Pure functions over a struct tg_report: no
 * allocation, no I/O, async-signal-safe. */
#ifndef TG_REPORT_INTERNAL_H
#define TG_REPORT_INTERNAL_H

#include <string.h>
#include "reports/report.h"
#include "core/builtin_tuners.h"

/* The native frames a report shows for a thread: its own native[] when it
 * has any, else the stack recorded at its last GIL-releasing CUDA call.
 * *where receives the label ("at entry", "in cuCtxSynchronize_v2", ...; may
 * be "" when capture left it empty). */
/* sizeof(a), refusing to compile when a is a pointer rather than an array
 * (a fixed-size report field passed through a ?: decays to a pointer). */
#define TG__FIELD_SIZE(a) \
    (sizeof(a) + 0 * sizeof(char[1 - 2 * __builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0]))]))

static inline void *const *tg__view_native(const struct tg_thread_view *v, int *n,
                                           const char **where)
{
    if (v->nnative > 0) {
        *n = v->nnative < TG_MAX_NATIVE_FRAMES ? v->nnative : TG_MAX_NATIVE_FRAMES;
        *where = v->native_where;
        return v->native;
    }
    if (v->has_cuda && v->cuda.nframes > 0) {
        *n = v->cuda.nframes < TG_MAX_NATIVE_FRAMES ? v->cuda.nframes : TG_MAX_NATIVE_FRAMES;
        *where = "";               /* writers say "in <cuda_fn>" */
        return v->cuda.frames;
    }
    *n = 0;
    *where = v->native_where;
    return v->native;
}

static inline int tg__npy(const struct tg_thread_view *v)
{
    return v->npy < 0 ? 0 : v->npy < TG_MAX_PY_FRAMES ? v->npy : TG_MAX_PY_FRAMES;
}

static inline int tg__ends_with(const char *s, size_t slen, const char *suffix, size_t n)
{
    return slen >= n && memcmp(s + slen - n, suffix, n) == 0;
}

/* The call site of thread view v (of report r) into the tuner, the frame the
 * SUMMARY line names for the entering thread: its first Python frame
 * (most recent first) that is neither in the tuner's own module file (derived
 * from tuner_class: "a.b.C" -> ".../a/b.py") nor in Triton's launch and
 * benchmarking plumbing (a file under "triton/runtime/", "triton/testing.py",
 * a file under "torch/cuda/"), searched below the outermost frame of the
 * tuner's module when there is one (a stack taken deep inside the tuner).  When every frame is one of those, frame
 * #1 (the tuner method's caller), else #0.  Returns -1 when there is no
 * Python frame. */
static inline int tg__call_site_frame(const struct tg_report *r, const struct tg_thread_view *v)
{
    int n = tg__npy(v);
    if (n == 0)
        return -1;
    char modfile[sizeof r->tuner_class + 4];
    size_t mlen = strnlen(r->tuner_class, sizeof r->tuner_class);
    size_t dot = mlen;
    while (dot > 0 && r->tuner_class[dot - 1] != '.')
        dot--;
    size_t flen = 0;
    if (dot > 1) {                 /* "a.b.C": module "a.b" */
        modfile[flen++] = '/';
        for (size_t i = 0; i + 1 < dot; i++)
            modfile[flen++] = r->tuner_class[i] == '.' ? '/' : r->tuner_class[i];
        memcpy(modfile + flen, ".py", 3);
        flen += 3;
    }
    /* A stack read while the thread was deep inside the tuner (a race seen
     * at exit: the other thread benchmarking, or compiling in the stdlib)
     * holds the tuner's own frames: the caller is below the outermost one. */
    int from = 0;
    for (int i = 0; i < n && flen; i++) {
        const char *f = v->py[i].file;
        size_t len = strnlen(f, sizeof v->py[i].file);
        if (tg__ends_with(f, len, modfile, flen) || (len == flen - 1 && memcmp(f, modfile + 1, len) == 0))
            from = i + 1;
    }
    if (from >= n)
        from = 0;
    for (int i = from; i < n; i++) {
        const char *f = v->py[i].file;
        size_t len = strnlen(f, sizeof v->py[i].file);
        /* the module file, matched as "/a/b.py" or the whole name "a/b.py" */
        if (flen && (tg__ends_with(f, len, modfile, flen) ||
                     (len == flen - 1 && memcmp(f, modfile + 1, len) == 0)))
            continue;
        /* the tuner's library, its benchmarking plumbing included: a race
         * seen at exit reads the entering thread's stack deep in do_bench
         * (torch.cuda.synchronize); core/builtin_tuners.inc */
        if (tg_tuner_library_file(f, len))
            continue;
        return i;
    }
    return n > 1 ? 1 : 0;
}

#endif
