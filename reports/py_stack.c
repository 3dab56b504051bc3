/* Python frames and thread names for reports.  See py_stack.h. */
#include "reports/py_stack.h"
#include "core/py_api.h"
#include "core/py_attr.h"
#include "core/py_ref.h"
#include "reports/py_program.h"
#include "reports/stack_fold.h"

#include <string.h>

/* A str with lone surrogates (a file name's bytes that are not UTF-8,
 * decoded with surrogateescape, as Python decodes paths): its bytes, else
 * the surrogates as \udcNN (backslashreplace); the writers show a byte that
 * is not UTF-8 as \xNN.  A new reference to the bytes, NULL on failure (no
 * exception left). */
static PyObject *surrogate_bytes(PyObject *o)
{
    if (!tg_py.PyUnicode_AsEncodedString || !tg_py.PyBytes_AsString)
        return NULL;
    PyObject *b = tg_py.PyUnicode_AsEncodedString(o, "utf-8", "surrogateescape");
    if (!b) {
        tg_py_drop_error();
        b = tg_py.PyUnicode_AsEncodedString(o, "utf-8", "backslashreplace");
    }
    tg_py_drop_error();
    return b;
}

/* The str o into dst, its tail where it is too long; "?" when it is no str.
 * GIL held. */
static void copy_str(char *dst, size_t len, PyObject *o)
{
    PyObject *bytes = NULL;
    const char *s = o ? tg_py.PyUnicode_AsUTF8(o) : NULL;
    if (!s && o) {
        tg_py_drop_error();
        bytes = surrogate_bytes(o);
        s = bytes ? tg_py.PyBytes_AsString(bytes) : NULL;
    }
    if (!s) {
        tg_py_drop_error();
        s = "?";
    }
    size_t n = strlen(s);
    if (n >= len) {
        /* Keep the tail of long paths: the file name matters most. */
        s += n - (len - 1);
        n = len - 1;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
    if (bytes)
        tg_py.Py_DecRef(bytes);
}

/* f's file and function from code (NULL: "?"). */
static void fill_code(struct tg_py_frame *f, PyObject *code)
{
    PyObject *file = code ? tg_py.PyObject_GetAttrString(code, "co_filename") : NULL;
    /* co_qualname (3.11+) says Autotuner.run rather than run. */
    PyObject *name = code ? tg_py.PyObject_GetAttrString(code, tg_py.minor >= 11 ? "co_qualname" : "co_name") : NULL;
    copy_str(f->file, sizeof f->file, file);
    const char *full = file ? tg_py.PyUnicode_AsUTF8(file) : NULL;
    tg_py_program_note(full, f->file); /* once per file name */
    copy_str(f->func, sizeof f->func, name);
    if (file)
        tg_py.Py_DecRef(file);
    if (name)
        tg_py.Py_DecRef(name);
    tg_py_drop_error();
}

void tg_py_code_frame(struct tg_py_frame *f, PyObject *code, int lasti)
{
    fill_code(f, code);
    f->line = code && lasti >= 0 && tg_py.PyCode_Addr2Line ? tg_py.PyCode_Addr2Line(code, lasti) : 0;
    tg_py_drop_error();
}

/* f as a frame object to hand out, else NULL (and f is left as it is: a
 * reference to what is not a frame is not ours to drop). */
static PyFrameObject *checked(PyFrameObject *f)
{
    if (f && tg_py.frame_type && tg_py_type_of((PyObject *)f) != tg_py.frame_type)
        return NULL;
    return f;
}

PyFrameObject *tg_py_walk_begin(struct tg_py_walk *w, void *tstate)
{
    w->gc_paused = !tg_py.free_threaded && tg_py.PyGC_Disable && tg_py.PyGC_Enable && tg_py.PyGC_Disable();
    PyFrameObject *f;
    if (tstate) {
        f = tg_py.PyThreadState_GetFrame((PyThreadState *)tstate); /* new reference */
    } else {
        f = tg_py.PyEval_GetFrame(); /* borrowed */
        if (f)
            tg_py.Py_IncRef((PyObject *)f);
    }
    w->frame = checked(f);
    return w->frame;
}

PyFrameObject *tg_py_walk_next(struct tg_py_walk *w)
{
    if (!w->frame)
        return NULL;
    PyFrameObject *back = tg_py.PyFrame_GetBack(w->frame); /* new reference */
    tg_py.Py_DecRef((PyObject *)w->frame);
    w->frame = checked(back);
    return w->frame;
}

void tg_py_walk_end(struct tg_py_walk *w)
{
    if (w->frame)
        tg_py.Py_DecRef((PyObject *)w->frame);
    w->frame = NULL;
    if (w->gc_paused)
        tg_py.PyGC_Enable();
    w->gc_paused = 0;
}

/* Frames past the head go round a ring of the last TG_MAX_PY_FRAMES -
 * TG_PY_HEAD_FRAMES slots; at the end the ring is put in order, so a stack
 * of any depth keeps its innermost and its outermost frames. */
#define TG_PY_TAIL_FRAMES (TG_MAX_PY_FRAMES - TG_PY_HEAD_FRAMES)

static void unroll_tail(struct tg_thread_view *v, long past_head)
{
    struct tg_py_frame *tail = &v->py[TG_PY_HEAD_FRAMES];
    static struct tg_py_frame tmp[TG_PY_TAIL_FRAMES]; /* under the report lock: one caller at a time */
    int start = (int)(past_head % TG_PY_TAIL_FRAMES);
    for (int i = 0; i < TG_PY_TAIL_FRAMES; i++)
        tmp[i] = tail[(start + i) % TG_PY_TAIL_FRAMES];
    memcpy(tail, tmp, sizeof tmp);
    v->npy = TG_MAX_PY_FRAMES;
    v->py_truncated = 1;
    v->py_omitted = (int)(past_head - TG_PY_TAIL_FRAMES);
}

/* One frame as the walk reads it: its code (a reference) and line. */
struct walked {
    PyObject *code;
    int line;
};

/* The walk: each frame's code and line into w (the same head and ring as
 * v->py), nothing else (tg_py_walk_begin's contract).  Returns how many
 * frames went past the head. */
static long walk_codes(struct walked *w, int *nhead, void *tstate)
{
    struct tg_py_walk walk;
    long past_head = 0;
    *nhead = 0;
    for (PyFrameObject *f = tg_py_walk_begin(&walk, tstate); f; f = tg_py_walk_next(&walk)) {
        struct walked *slot = *nhead < TG_PY_HEAD_FRAMES ? &w[(*nhead)++]
                                                         : &w[TG_PY_HEAD_FRAMES + past_head++ % TG_PY_TAIL_FRAMES];
        if (slot->code)
            tg_py.Py_DecRef(slot->code); /* a frame further in, still on the stack: its code is alive */
        slot->code = tg_py.PyFrame_GetCode(f);
        slot->line = tg_py.PyFrame_GetLineNumber(f);
    }
    tg_py_walk_end(&walk);
    return past_head;
}

void tg_py_capture_frames(struct tg_thread_view *v, void *tstate)
{
    PyObject *et, *ev, *tb;
    tg_py.PyErr_Fetch(&et, &ev, &tb);
    struct walked w[TG_MAX_PY_FRAMES];
    memset(w, 0, sizeof w);
    int nhead;
    long past_head = walk_codes(w, &nhead, tstate);
    /* The walk is over: the names are read from the codes it kept
     * (attribute reads, the program's facts: they allocate). */
    int n = nhead + (int)(past_head < TG_PY_TAIL_FRAMES ? past_head : TG_PY_TAIL_FRAMES);
    for (int i = 0; i < n; i++) {
        fill_code(&v->py[i], w[i].code);
        v->py[i].line = w[i].line;
        if (w[i].code)
            tg_py.Py_DecRef(w[i].code);
    }
    tg_py_drop_error();
    v->npy = n;
    v->py_truncated = 0;
    v->py_omitted = 0;
    if (past_head > TG_PY_TAIL_FRAMES)
        unroll_tail(v, past_head);
    tg_py.PyErr_Restore(et, ev, tb);
}

void tg_py_stack_arm(void)
{
    PyObject *et, *ev, *tb;
    tg_py.PyErr_Fetch(&et, &ev, &tb);
    PyObject *mods = tg_py.PyImport_GetModuleDict(); /* borrowed */
    PyObject *os = tg_py_dict_get_str(mods, "os");
    char file[256];
    file[0] = '\0';
    if (os) {
        tg_py_attr_str(os, "__file__", file, sizeof file);
        tg_py.Py_DecRef(os);
    }
    char *slash = strrchr(file, '/');
    if (slash && slash != file) {
        *slash = '\0';
        tg_stack_set_stdlib(file);
    }
    tg_py_drop_error();
    tg_py.PyErr_Restore(et, ev, tb);
}

void tg_py_thread_name(unsigned long ident, char *buf, int len)
{
    buf[0] = '\0';
    /* Finalizing: sys.modules may be gone (PyImport_GetModuleDict then
     * ends the process: a finalizer run at the last collection calling a
     * tuner), and threading with it. */
    if (tg_py_finalizing())
        return;
    PyObject *et, *ev, *tb;
    tg_py.PyErr_Fetch(&et, &ev, &tb);
    PyObject *mods = tg_py.PyImport_GetModuleDict(); /* borrowed */
    PyObject *threading = tg_py_dict_get_str(mods, "threading");
    PyObject *active = threading ? tg_py.PyObject_GetAttrString(threading, "_active") : NULL;
    PyObject *key = active ? tg_py.PyLong_FromUnsignedLong(ident) : NULL;
    PyObject *th = tg_py_dict_get(active, key); /* the thread may end meanwhile and leave _active */
    PyObject *name = th ? tg_py.PyObject_GetAttrString(th, "name") : NULL;
    if (name)
        copy_str(buf, (size_t)len, name);
    if (name)
        tg_py.Py_DecRef(name);
    if (th)
        tg_py.Py_DecRef(th);
    if (threading)
        tg_py.Py_DecRef(threading);
    if (key)
        tg_py.Py_DecRef(key);
    if (active)
        tg_py.Py_DecRef(active);
    tg_py_drop_error();
    tg_py.PyErr_Restore(et, ev, tb);
}

