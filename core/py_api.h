/* The CPython C API as tunerguard sees it: opaque objects and a table of
 * function pointers resolved at run time (py_api.inc).  Never include
 * Python.h: the headers differ between versions, the exported functions don't. */
#ifndef TG_PY_API_H
#define TG_PY_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct tg_pyobject PyObject;
typedef struct tg_pyframe PyFrameObject;
typedef struct tg_pythreadstate PyThreadState;
typedef ssize_t Py_ssize_t;

/* Stable layout since Python 2. */
typedef struct {
    const char *ml_name;
    void *ml_meth;
    int ml_flags;
    const char *ml_doc;
} PyMethodDef;

#define TG_METH_VARARGS 0x0001
#define TG_METH_KEYWORDS 0x0002
#define TG_METH_NOARGS 0x0004
#define TG_METH_O 0x0008
#define TG_METH_FASTCALL 0x0080
/* PY_VECTORCALL_ARGUMENTS_OFFSET: high bit of nargsf. */
#define TG_VECTORCALL_OFFSET ((size_t)1 << (8 * sizeof(size_t) - 1))

/* The CPython versions served: 3.TG_PY_MINOR_FIRST to 3.TG_PY_MINOR_LAST with
 * a GIL, 3.TG_PY_FT_MINOR_FIRST to 3.TG_PY_FT_MINOR_LAST free-threaded
 * (Py_GIL_DISABLED: 3.13t, 3.14t): those whose object layouts guard/ reads
 * were checked against their headers (docs/free-threading.md).  Outside
 * them tunerguard stays inert (one line when a target module is imported,
 * loader/py_arm.c). */
#define TG_PY_MINOR_FIRST 9
#define TG_PY_MINOR_LAST 15
#define TG_PY_FT_MINOR_FIRST 13
#define TG_PY_FT_MINOR_LAST 14

struct tg_py_api {
#define TG_PYFN(req, when, ret, name, params) ret(*name) params;
#include "py_api.inc"
#undef TG_PYFN
    PyObject *none;        /* &_Py_NoneStruct */
    PyObject *exc_exception; /* PyExc_Exception, resolved with the guards; NULL if absent */
    PyObject *frame_type;  /* &PyFrame_Type, resolved with the guards; NULL if absent */
    int minor;             /* 3.minor, -1 when not a 3.x */
    int free_threaded;     /* a Py_GIL_DISABLED build (3.13t, 3.14t, ...) */
    int supported;         /* 3.9 to 3.15 with a GIL, 3.13t or 3.14t */
    char version[24];      /* "3.8.18": Py_GetVersion up to the first space */
};

extern struct tg_py_api tg_py;

/* The object header's size in pointer-sized words: 2 with a GIL (ob_refcnt,
 * ob_type), 4 in a free-threaded build (ob_tid; the padding or flags,
 * ob_mutex, ob_gc_bits and ob_ref_local; ob_ref_shared; ob_type), 64-bit,
 * 3.9 to 3.15 and 3.13t/3.14t.  Every struct tunerguard reads at a fixed
 * offset (PyTypeObject, the descriptors) starts with that header and is
 * otherwise declared the same in both builds: its fields are this many
 * words in, plus their place after the header (the tables in
 * docs/free-threading.md).  Valid once tg_py_resolve_hook has run. */
static inline size_t tg_py_header_words(void)
{
    return tg_py.free_threaded ? 4 : 2;
}

/* The address of the pointer-sized field `index` after o's object header
 * (0: the first field past the header; a PyVarObject's ob_size). */
static inline void *tg_py_field(PyObject *o, size_t index)
{
    return (char *)(void *)o + (tg_py_header_words() + index) * sizeof(void *);
}

/* An object's type (borrowed): the header's last word, ob_type. */
static inline PyObject *tg_py_type_of(PyObject *o)
{
    return ((PyObject **)(void *)o)[tg_py_header_words() - 1];
}

/* Py_DECREF for arming in a process that may guard nothing.  The exported
 * Py_DecRef is a function CPython itself never calls (its code uses the
 * macro), so a call faults in a window of the interpreter's code for us
 * alone (64 KiB of RSS in Debian's python3.11: docs/benchmarks.md, "Start-up
 * cost"); _Py_Dealloc is what the macro calls.  The header is the count
 * first on the versions this does itself, 64-bit 3.9 to 3.15 without free
 * threading.  3.9-3.11: the whole word counts.  3.12+: the low 32 bits count
 * (3.14 and 3.15 declare them a uint32_t, with ob_overflow and ob_flags
 * above), and a count negative there is immortal: left alone.
 * Elsewhere, or without _Py_Dealloc, Py_DecRef.  A debug build's
 * sys.gettotalrefcount() does not see these.  GIL held; o not NULL. */
static inline void tg_py_decref(PyObject *o)
{
    if (tg_py.minor < TG_PY_MINOR_FIRST || tg_py.minor > TG_PY_MINOR_LAST || tg_py.free_threaded || !tg_py._Py_Dealloc ||
        sizeof(Py_ssize_t) != 8) {
        tg_py.Py_DecRef(o);
        return;
    }
    Py_ssize_t *count = (Py_ssize_t *)(void *)o;
    if (tg_py.minor < 12) {
        if (--*count == 0)
            tg_py._Py_Dealloc(o);
        return;
    }
    uint32_t low = (uint32_t)*count; /* the low half by value: either byte order */
    if ((int32_t)low < 0)
        return;
    --*count; /* low >= 1 (our reference): nothing borrowed from the bits above */
    if (low == 1)
        tg_py._Py_Dealloc(o);
}

/* Is the interpreter finalizing (Py_IsFinalizing; _Py_IsFinalizing before
 * 3.13)?  0 where neither is resolved.  GIL held. */
static inline int tg_py_finalizing(void)
{
    int (*fin)(void) = tg_py.Py_IsFinalizing ? tg_py.Py_IsFinalizing : tg_py._Py_IsFinalizing;
    return fin && fin();
}

/* The constructor's part: PySys_AddAuditHook and the version (minor,
 * free_threaded, supported, version).  Returns 0 in a CPython process (any
 * version with audit hooks: 3.8 too), -1 elsewhere.  Calls only
 * Py_GetVersion; leaves dlerror() as it was. */
int tg_py_resolve_hook(void);
/* A libpython symbol by name (dlsym in the process's scope), NULL if absent:
 * for the constructor's one-off calls that are no row of the table. */
void *tg_py_symbol(const char *name);

/* The arming part of the table (py_api.inc, when = A), once, at arming (GIL
 * held): what arming, the audit hook and the finder's answer for a module
 * that is no target call.  Returns 0 when the interpreter is one tunerguard
 * serves (tg_py.supported) and every required function of that part is
 * there, -1 otherwise (then nothing is armed). */
int tg_py_resolve(void);

/* The rest (when = G), once, with the first target module (a target's
 * module found in sys.modules or by the finder), before any guard exists:
 * a process that imports no target pays no dlsym for it.  0, or -1 when a
 * required function is missing (then nothing is guarded).  Until it has
 * returned 0 those pointers are NULL: whatever calls one runs only where a
 * guard was installed. */
int tg_py_resolve_guards(void);

/* Where the interpreter is not served: PyTuple_GetItem, PyUnicode_AsUTF8 and
 * PyErr_Clear only (enough to read an "import" audit event).  0 or -1. */
int tg_py_resolve_unsupported(void);

/* Parse Py_GetVersion()'s string: *minor (3.minor, -1 if not 3.x) and
 * *free_threaded.  Returns 0 when tunerguard serves that version (3.9 to
 * 3.15 with a GIL, 3.13t and 3.14t), -1 otherwise.  Pure. */
int tg_py_version_parse(const char *version, int *minor, int *free_threaded);

/* Is this process a CPython (its API among the global symbols)?  Reads the
 * loaded objects' symbol tables (no dlsym, dlerror() untouched); callable
 * from the constructor. */
int tg_py_present(void);

/* Does this thread hold the GIL?  In a free-threaded build (GIL off or
 * turned back on): has it an attached thread state, so that it may call the
 * C API and a stop-the-world pause waits for it; never "no other thread
 * runs Python".  0 in a process without Python or before the first target
 * module (the function is not resolved there; no guard exists then
 * either).  PyGILState_Check is a TLS read and a compare; for slow paths
 * (isolate_tuning, a report). */
static inline int tg_py_gil_held(void)
{
    int (*check)(void) = tg_py.PyGILState_Check;
    return check && check();
}

#endif
