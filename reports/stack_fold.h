/* What a report's text shows of a long Python stack: each frame classed
 * (the program's own code, the tuner, import machinery, the standard
 * library, other libraries) and the middle folded the way CPython's
 * traceback does: a recursion (the same frame again) as one line with its
 * count, a run of import machinery as one line, a long run of library
 * frames as one line, never the program's or the tuner's frames, never the
 * innermost frames or the thread's start.  The JSON Lines record keeps every
 * frame.  Pure functions over the report plus the standard library's
 * directory and the verdicts on file names below: no allocation, no I/O,
 * async-signal-safe. */
#ifndef TG_STACK_FOLD_H
#define TG_STACK_FOLD_H

#include "reports/report.h"

enum tg_frame_class {
    TG_FC_PROGRAM,   /* the program's own code */
    TG_FC_TUNER,     /* the tuner's module, Triton's launch and benchmarking */
    TG_FC_IMPORT,    /* <frozen importlib._bootstrap*>, importlib/ */
    TG_FC_STDLIB,    /* the standard library, other <frozen ...> */
    TG_FC_LIBRARY,   /* site-packages, dist-packages, <string> and such */
};

/* The interpreter's standard library directory (the directory of
 * os.__file__, e.g. "/usr/lib/python3.11"); set once at arming (the arming lock),
 * before any report.  Unset, a path holding "/lib/python3." outside
 * site-packages counts as the standard library. */
void tg_stack_set_stdlib(const char *dir);

/* A file the path rules above call the program's (anything else not in
 * site-packages, dist-packages, the standard library or a "<...>" name) is
 * the program's unless a verdict says otherwise: reports/py_program.c
 * decides at capture, once per file name, whether it lies in the program's
 * folder and outside every installed distribution.  Without a verdict (a
 * report built by hand, a process whose program folder is unknown) it is
 * the program's. */
enum tg_frame_class tg_frame_class(const struct tg_report *r, const struct tg_py_frame *f);

/* Verdicts, by file name as a report frame stores it (at most
 * TG_FILE_NAME_MAX bytes are read).  set: under the report lock, one writer at a time;
 * get: 1 the program's, 0 not, -1 undecided (async-signal-safe);
 * tg_stack_maybe_program: whether the path rules alone call the file the
 * program's (only those need a verdict); forget: every verdict (unit
 * tests). */
#define TG_FILE_NAME_MAX 200
void tg_stack_set_file_program(const char *file, int program);
int tg_stack_file_program(const char *file);
int tg_stack_maybe_program(const char *file);
void tg_stack_forget_files(void);

/* The first frame of v (most recent first) in the program's own code,
 * searched below the tuner's outermost frame when it has one; -1 if none. */
int tg_program_frame(const struct tg_report *r, const struct tg_thread_view *v);

/* The frame that stands for v's call site when reports are told apart:
 * its program frame below the tuner, else the first outside the tuner and
 * Triton's plumbing (tg__call_site_frame); never a program frame the
 * benchmark called into (a hook), whose line depends on where the capture
 * fell.  -1 without Python frames. */
int tg_site_frame(const struct tg_report *r, const struct tg_thread_view *v);

/* The frame of r's entering thread that its SUMMARY line and its JSON
 * "location" name: tg_site_frame of the entering thread. */
int tg_summary_frame(const struct tg_report *r);

/* One line of a folded stack. */
enum tg_fold_kind {
    TG_FOLD_FRAME,    /* frame `first` */
    TG_FOLD_REPEAT,   /* "[previous line repeated `count` more times]" */
    TG_FOLD_IMPORT,   /* `count` import machinery frames from `first` */
    TG_FOLD_LIBRARY,  /* `count` library frames from `first` */
    TG_FOLD_OMITTED,  /* `count` frames not captured (v->py_omitted) */
};
struct tg_fold_line {
    enum tg_fold_kind kind;
    int first, count;
};

/* Fold v's frames into at most max lines (max >= TG_MAX_PY_FRAMES + 1 shows
 * every line); returns how many. */
int tg_py_fold(const struct tg_report *r, const struct tg_thread_view *v, struct tg_fold_line *out, int max);

/* Native frames (symbolized, native_sym[]): the interpreter's own
 * (evaluation, calls, python/libpython frames of any name, thread start);
 * tunerguard's guard of a tuner method (a Python frame of the tuner already
 * shows that call), as opposed to its CUDA hooks; the frames that add to the
 * Python stack (neither: an extension module, the driver, a hook; an
 * unsymbolized frame counts).  tg_native_start_tail: the first of the
 * outermost frames that are all the interpreter's or the C library's. */
int tg_native_interp(const struct tg_thread_view *v, int i);
int tg_native_guard(const struct tg_thread_view *v, int i);
int tg_native_adds(const struct tg_thread_view *v, int i);
int tg_native_start_tail(const struct tg_thread_view *v, int n);

#endif
