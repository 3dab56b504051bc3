/* Classing and folding of Python frames for the text report.  See
 * stack_fold.h. */
#include "reports/stack_fold.h"
#include "reports/mixed_stack.h"
#include "reports/report_internal.h"
#include "core/hash.h"

#include <stdint.h>
#include <string.h>

/* A stack longer than this has its library runs folded too. */
#define TG_FOLD_LONG 24
/* Innermost frames never folded. */
#define TG_FOLD_KEEP_INNER 2
/* A recursion shows this many of its frames, as CPython's traceback.c. */
#define TG_FOLD_RECURSE_SHOWN 3
/* A run of library frames (no import machinery) folded from this length. */
#define TG_FOLD_LIB_RUN 4

static char stdlib_dir[256]; /* written once at arming, before any report */
static size_t stdlib_len;

void tg_stack_set_stdlib(const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 0 || n + 2 > sizeof stdlib_dir)
        return;
    memcpy(stdlib_dir, dir, n);
    stdlib_dir[n] = '/';
    stdlib_dir[n + 1] = '\0';
    stdlib_len = n + 1;
}

static int has(const char *f, size_t len, const char *s)
{
    return memmem(f, len, s, strlen(s)) != NULL;
}

/* The tuner's own module file ("a.b.C" -> "/a/b.py") into buf; its length. */
static size_t tuner_module_file(const struct tg_report *r, char *buf)
{
    size_t mlen = strnlen(r->tuner_class, sizeof r->tuner_class), dot = mlen, flen = 0;
    while (dot > 0 && r->tuner_class[dot - 1] != '.')
        dot--;
    if (dot <= 1)
        return 0;
    buf[flen++] = '/';
    for (size_t i = 0; i + 1 < dot; i++)
        buf[flen++] = r->tuner_class[i] == '.' ? '/' : r->tuner_class[i];
    memcpy(buf + flen, ".py", 3);
    return flen + 3;
}

static int is_tuner_file(const struct tg_report *r, const char *f, size_t len)
{
    char modfile[sizeof r->tuner_class + 4];
    size_t flen = tuner_module_file(r, modfile);
    if (flen && (tg__ends_with(f, len, modfile, flen) || (len == flen - 1 && memcmp(f, modfile + 1, len) == 0)))
        return 1;
    return tg_tuner_library_file(f, len); /* core/builtin_tuners.inc */
}

/* The verdicts of reports/py_program.c, one per file name: the name's
 * hash with its low bit saying "the program's"; 0 is a free slot.  Written
 * at capture (under the report lock, reports/emit.h: one writer at a time,
 * with a GIL or without one), read by the writers: one atomic word per
 * slot, so a reader sees a whole verdict or none. */
#define TG_FILE_SLOTS 4096
static uint64_t file_verdict[TG_FILE_SLOTS];

static uint64_t file_hash(const char *f, size_t len)
{
    uint64_t h = tg_hash_bytes(TG_HASH_SEED, f, len);
    return (h | 2) & ~(uint64_t)1; /* never 0, the low bit free */
}

static uint64_t *verdict_slot(uint64_t h)
{
    unsigned s = (unsigned)(h >> 40) & (TG_FILE_SLOTS - 1);
    for (int probe = 0; probe < 32; probe++, s = (s + 1) & (TG_FILE_SLOTS - 1)) {
        uint64_t v = __atomic_load_n(&file_verdict[s], __ATOMIC_ACQUIRE);
        if (v == 0 || (v & ~(uint64_t)1) == h)
            return &file_verdict[s];
    }
    return NULL; /* that stretch is full: undecided */
}

void tg_stack_set_file_program(const char *file, int program)
{
    uint64_t h = file_hash(file, strnlen(file, TG_FILE_NAME_MAX));
    uint64_t *slot = verdict_slot(h);
    if (slot)
        __atomic_store_n(slot, h | (program ? 1 : 0), __ATOMIC_RELEASE);
}

static int file_program(const char *f, size_t len)
{
    uint64_t h = file_hash(f, len);
    uint64_t *slot = verdict_slot(h);
    uint64_t v = slot ? __atomic_load_n(slot, __ATOMIC_ACQUIRE) : 0;
    return v == 0 ? -1 : (int)(v & 1);
}

int tg_stack_file_program(const char *file)
{
    return file_program(file, strnlen(file, TG_FILE_NAME_MAX));
}

void tg_stack_forget_files(void)
{
    memset(file_verdict, 0, sizeof file_verdict);
}

/* The class of a file by its path alone: no tuner, no verdict. */
static enum tg_frame_class path_class(const char *f, size_t len)
{
    if (len >= 17 && memcmp(f, "<frozen importlib", 17) == 0)
        return TG_FC_IMPORT;
    if (len && f[0] == '<')
        return memcmp(f, "<frozen ", len < 8 ? len : 8) == 0 ? TG_FC_STDLIB : TG_FC_LIBRARY;
    if (has(f, len, "/site-packages/") || has(f, len, "/dist-packages/"))
        return TG_FC_LIBRARY;
    int std = stdlib_len ? len > stdlib_len && memcmp(f, stdlib_dir, stdlib_len) == 0
                         : has(f, len, "/lib/python3.");
    if (std)
        return has(f, len, "/importlib/") ? TG_FC_IMPORT : TG_FC_STDLIB;
    return TG_FC_PROGRAM;
}

int tg_stack_maybe_program(const char *file)
{
    return path_class(file, strnlen(file, TG_FILE_NAME_MAX)) == TG_FC_PROGRAM;
}

enum tg_frame_class tg_frame_class(const struct tg_report *r, const struct tg_py_frame *fr)
{
    const char *f = fr->file;
    size_t len = strnlen(f, sizeof fr->file);
    if (!(len && f[0] == '<') && is_tuner_file(r, f, len))
        return TG_FC_TUNER;
    enum tg_frame_class c = path_class(f, len);
    if (c == TG_FC_PROGRAM && file_program(f, len) == 0)
        return TG_FC_LIBRARY; /* outside the program's folder, or a distribution's */
    return c;
}

/* v's first program frame below its tuner's frames; with anywhere, else
 * its first program frame at all.  -1 if none.  A stack taken at the
 * call's entry ends (innermost) in the call into the tuner: its caller is
 * below that first run of tuner frames, also where the call is made from
 * inside another tuner's call (a pre_hook that launches another autotuned
 * kernel: the hook's line, not the outer kernel's call).  A stack taken
 * deep inside may hold program frames the tuner called (a do_bench, a
 * hook, an import): the caller is below the outermost tuner frame.  At its
 * return a thread's stack is its caller's, as at entry. */
static int program_frame(const struct tg_report *r, const struct tg_thread_view *v, int anywhere)
{
    int n = tg__npy(v), from = 0;
    if (strcmp(v->native_where, "at entry") == 0 || strcmp(v->native_where, "at return") == 0) {
        while (from < n && tg_frame_class(r, &v->py[from]) == TG_FC_TUNER)
            from++;
    } else {
        for (int i = 0; i < n; i++)
            if (tg_frame_class(r, &v->py[i]) == TG_FC_TUNER)
                from = i + 1;
    }
    for (int pass = 0; pass < 1 + anywhere; pass++)
        for (int i = pass ? 0 : from; i < n; i++)
            if (tg_frame_class(r, &v->py[i]) == TG_FC_PROGRAM)
                return i;
    return -1;
}

int tg_program_frame(const struct tg_report *r, const struct tg_thread_view *v)
{
    return program_frame(r, v, 1);
}

int tg_site_frame(const struct tg_report *r, const struct tg_thread_view *v)
{
    int i = program_frame(r, v, 0);
    return i >= 0 ? i : tg__call_site_frame(r, v);
}

int tg_summary_frame(const struct tg_report *r)
{
    return tg_site_frame(r, &r->entering);
}

static int same_frame(const struct tg_py_frame *a, const struct tg_py_frame *b)
{
    return a->line == b->line && strcmp(a->file, b->file) == 0 && strcmp(a->func, b->func) == 0;
}

static int put(struct tg_fold_line *out, int max, int k, enum tg_fold_kind kind, int first, int count)
{
    if (k < max)
        out[k] = (struct tg_fold_line){kind, first, count};
    return k + 1;
}

static int is_module_body(const struct tg_py_frame *f)
{
    return strcmp(f->func, "<module>") == 0;
}

/* The end of the run of frames from i that a fold may take: neither the
 * program's nor the tuner's (but a module body run by the import machinery
 * on both sides of it, unless it is the program frame `keep`), not past
 * end.  *imports: the run holds import machinery. */
static int foldable_run(const struct tg_report *r, const struct tg_thread_view *v, int i, int end, int keep,
                        int *imports)
{
    *imports = 0;
    int j = i;
    for (; j < end; j++) {
        enum tg_frame_class c = tg_frame_class(r, &v->py[j]);
        if (c == TG_FC_PROGRAM && j != keep && j > i && j + 1 < end && is_module_body(&v->py[j]) &&
            tg_frame_class(r, &v->py[j - 1]) == TG_FC_IMPORT && tg_frame_class(r, &v->py[j + 1]) == TG_FC_IMPORT)
            continue;
        if (c == TG_FC_PROGRAM || c == TG_FC_TUNER)
            break;
        *imports |= c == TG_FC_IMPORT;
    }
    return j;
}

int tg_py_fold(const struct tg_report *r, const struct tg_thread_view *v, struct tg_fold_line *out, int max)
{
    int n = tg__npy(v), k = 0;
    int gap = v->py_omitted > 0 && n > TG_PY_HEAD_FRAMES ? TG_PY_HEAD_FRAMES : -1;
    int longstack = n + (v->py_omitted > 0 ? v->py_omitted : 0) > TG_FOLD_LONG;
    int keep = tg_program_frame(r, v);
    for (int i = 0; i < n;) {
        if (i == gap)
            k = put(out, max, k, TG_FOLD_OMITTED, i, v->py_omitted);
        int seg_end = gap > i ? gap : n;            /* no fold crosses the gap */
        int fold_end = seg_end == n ? n - 1 : seg_end; /* nor takes the thread's start */
        if (i >= TG_FOLD_KEEP_INNER && i < fold_end) {
            int imports, j = foldable_run(r, v, i, fold_end, keep, &imports);
            if ((imports && j - i >= 2) || (longstack && j - i >= TG_FOLD_LIB_RUN)) {
                k = put(out, max, k, imports ? TG_FOLD_IMPORT : TG_FOLD_LIBRARY, i, j - i);
                i = j;
                continue;
            }
        }
        int j = i + 1;
        while (j < seg_end && same_frame(&v->py[j], &v->py[i]))
            j++;
        int shown = j - i > TG_FOLD_RECURSE_SHOWN ? TG_FOLD_RECURSE_SHOWN : j - i;
        for (int s = 0; s < shown; s++)
            k = put(out, max, k, TG_FOLD_FRAME, i + s, 1);
        if (j - i > shown)
            k = put(out, max, k, TG_FOLD_REPEAT, i + shown, j - i - shown);
        i = j;
    }
    return k < max ? k : max;
}

/* Is native frame i the interpreter's own (evaluation, calls, unnamed
 * frames of python or libpython, thread start)?  Unknown frames are not. */
static int in_module(const struct tg_thread_view *v, int i, const char *prefix)
{
    if (!(i < v->nsym && v->native_sym[i][0]))
        return 0;
    const char *s = v->native_sym[i], *m = NULL;
    size_t len = strnlen(s, sizeof v->native_sym[i]);
    for (size_t k = 0; k + 1 < len; k++)
        if (s[k] == ' ' && s[k + 1] == '(')
            m = s + k + 2; /* the last " (module+0x...)" */
    return m && strncmp(m, prefix, strlen(prefix)) == 0;
}

int tg_native_interp(const struct tg_thread_view *v, int i)
{
    if (!(i < v->nsym && v->native_sym[i][0]))
        return 0;
    return tg_mixed_classify(v->native_sym[i], sizeof v->native_sym[i]) != TG_NATIVE_KEEP ||
           in_module(v, i, "python") || in_module(v, i, "libpython");
}

/* The first of the outermost frames that are all the interpreter's or the C
 * library's (the thread's start): folded with the interpreter's. */
int tg_native_start_tail(const struct tg_thread_view *v, int n)
{
    int t = n;
    while (t > 0 && (tg_native_interp(v, t - 1) || in_module(v, t - 1, "libc.so")))
        t--;
    return t;
}

/* tunerguard's guard of a tuner method (the call a Python frame of the
 * tuner already shows), as opposed to its CUDA hooks. */
int tg_native_guard(const struct tg_thread_view *v, int i)
{
    if (!(i < v->nsym && v->native_sym[i][0]))
        return 0;
    const char *s = v->native_sym[i];
    return strncmp(s, "tg_guard_call", 13) == 0 || strncmp(s, "tg__guard_", 10) == 0 ||
           strncmp(s, "tg__lazy_call", 13) == 0 || in_module(v, i, "libtunerguard_core.so");
}

/* Does native frame i add to the Python stack? */
int tg_native_adds(const struct tg_thread_view *v, int i)
{
    return !tg_native_interp(v, i) && !tg_native_guard(v, i);
}
