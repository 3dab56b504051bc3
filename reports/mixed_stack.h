/* The mixed view of one thread's stacks, as py-spy --native shows it: the
 * native stack with each frame of the interpreter's evaluation function
 * replaced by the Python frames it runs, other interpreter frames dropped.
 *
 * Pure functions over already symbolized frames (native_sym strings of the
 * form "name+0xoff (module+0xoff)", see reports/native_stack.h): no
 * allocation, no lock, no I/O; async-signal-safe, so the writers compute the
 * view while they write. */
#ifndef TG_MIXED_STACK_H
#define TG_MIXED_STACK_H

#include <stddef.h>

#include "reports/report.h"

enum tg_mixed_kind { TG_MIXED_NATIVE = 0, TG_MIXED_PYTHON = 1 };

/* One frame of the mixed view: an index into the view's native frames
 * (native_sym[] / the frames tg__view_native gives) or into py[]. */
struct tg_mixed_frame {
    unsigned char kind;            /* enum tg_mixed_kind */
    short index;
};

#define TG_MAX_MIXED_FRAMES (TG_MAX_NATIVE_FRAMES + TG_MAX_PY_FRAMES)

/* What the merge does with one symbolized native frame. */
enum tg_native_class {
    TG_NATIVE_KEEP,                /* shown as a native frame */
    TG_NATIVE_EVAL,                /* _PyEval_EvalFrameDefault[.cold...] / PyEval_EvalFrameEx:
                                      replaced by Python frames */
    TG_NATIVE_DROP,                /* interpreter plumbing or thread/process start */
};

/* Classify one symbolized frame (sym may be NULL or "0x..." when unknown:
 * KEEP).  An eval function is recognized by name in any module; other
 * frames of python* / libpython* are dropped unless their name starts with
 * an allow-listed prefix (time, sys, gc, os, unicode, thread, stringio,
 * sre, PyGILState, PyThread, lock: split on '_' and '.'); __libc_start_main,
 * __libc_start_call_main, __clone, __clone3 and start_thread are dropped
 * everywhere. */
enum tg_native_class tg_mixed_classify(const char *sym, size_t max);

/* The merge.  syms: nnative strings, innermost first, each at syms +
 * i*stride (at most max bytes each); npy Python frames, most recent first.
 * Eval frames take Python frames in order, one each, and the outermost eval
 * frame takes all that remain (without entry-frame information this is
 * py-spy's rule for a count mismatch); with no eval frame at all, the
 * Python frames follow the native ones.  Writes at most outmax entries to
 * out and returns how many. */
int tg_mixed_merge(const char *syms, size_t stride, size_t max, int nnative, int npy,
                   struct tg_mixed_frame *out, int outmax);

/* The mixed view of a report's thread view: 0 entries unless its native
 * frames were symbolized (nsym > 0) and it has Python frames. */
int tg_mixed_view(const struct tg_thread_view *v, struct tg_mixed_frame *out, int outmax);

#endif
