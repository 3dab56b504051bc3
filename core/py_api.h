/* The CPython C API as tunerguard sees it: opaque objects and a table of
 * function pointers resolved at run time (py_api.inc).  Never include
 * Python.h: the headers differ between versions, the exported functions don't. */
#ifndef TG_PY_API_H
#define TG_PY_API_H

#include <stddef.h>
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
#define TG_METH_O 0x0008
#define TG_METH_FASTCALL 0x0080
/* PY_VECTORCALL_ARGUMENTS_OFFSET: high bit of nargsf. */
#define TG_VECTORCALL_OFFSET ((size_t)1 << (8 * sizeof(size_t) - 1))

struct tg_py_api {
#define TG_PYFN(req, ret, name, params) ret(*name) params;
#include "py_api.inc"
#undef TG_PYFN
    PyObject *none;        /* &_Py_NoneStruct */
    int minor;             /* 9..13 */
    int free_threaded;     /* a 3.13t build: refused at arming */
};

extern struct tg_py_api tg_py;

/* Resolve the table from the process's global symbols.  Returns 0 when the
 * process is a CPython tunerguard supports, -1 otherwise (not Python, a
 * missing required symbol: then nothing is armed).  Call once, from the
 * constructor; no Python API is called. */
int tg_py_resolve(void);

/* Is this process a CPython (its API among the global symbols)?  One dlsym;
 * callable from the constructor. */
int tg_py_present(void);

#define TG_PY(fn) (tg_py.fn)

#endif
