/* tunerguard's import finder (tunerguard.Finder in sys.meta_path), the
 * loader's part: its type, made from a spec with no module; its
 * find_spec, which answers None at once for a module that is no target and
 * hands a target module to the core (guard/py_arm_guard.c wraps its
 * loader); and putting it in sys.meta_path.  When it goes in is arming's
 * decision (loader/py_arm.c).
 *
 * Runs in every Python process that imports a target's package
 * (TG_STARTUP, core/startup.h).  GIL held in every call; none leaves an
 * exception set; tg__arm_install_finder allocates the finder (a Python
 * object that sys.meta_path alone holds). */
#include "loader/py_arm_internal.h"
#include "loader/py_arm_loader.h"
#include "core/startup.h"
#include "loader/core_api.h"
#include "core/log.h"
#include "core/py_api.h"

#include <string.h>

/* The text the finder's negative answer reads: in RELRO, not .rodata
 * (TG_STARTUP_TEXT, loader/py_arm_loader.h). */
TG_STARTUP_TEXT(txt_sys, "sys");
TG_STARTUP_TEXT(txt_meta_path, "meta_path");
TG_STARTUP_TEXT(txt_find_spec, "find_spec");
TG_STARTUP_TEXT(txt_invalidate_caches, "invalidate_caches");
TG_STARTUP_TEXT(txt_finder_name, "tunerguard.Finder");
TG_STARTUP_TEXT(txt_finder_doc, "tunerguard's import finder (LD_PRELOAD=libtunerguard.so): guards tuner classes as their "
                                "modules are imported; finds nothing itself.");

/* Our finder in sys.meta_path, for identity only (loader/py_arm_internal.h). */
PyObject *tg__arm_finder_self;

/* The meta-path finder's find_spec(name, path, target=None): for target
 * modules only, the core asks the finders after us for the spec and wraps
 * its loader's exec_module; for everything else None at once, here in the
 * loader.  tg__arm_finder_self
 * only tells our own finder apart in sys.meta_path: no reference of ours
 * (the list holds the finder), so that at finalization the finder and its
 * class go with sys.meta_path.  A finder of ours kept alive to the end
 * pinned the obmalloc arena it was made in, which then stayed resident
 * through finalization: +120 KiB of peak RSS in `python -c pass`
 * (docs/benchmarks.md, "Start-up cost"). */

/* Argument i of a vectorcall by position or by keyword (borrowed), or None. */
TG_STARTUP static PyObject *vc_arg(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t i, const char *kw)
{
    if (i < nargs)
        return args[i];
    Py_ssize_t nkw = kwnames ? tg_py.PyTuple_Size(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *n = tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(kwnames, k));
        if (n && strcmp(n, kw) == 0)
            return args[nargs + k];
    }
    tg_py.PyErr_Clear();
    return tg_py.none;
}

TG_STARTUP static PyObject *find_spec(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    (void)self;
    PyObject *fullname = vc_arg(args, nargs, kwnames, 0, "fullname");
    const char *name = fullname != tg_py.none ? tg_py.PyUnicode_AsUTF8(fullname) : NULL;
    if (!name || !tg__arm_is_target_module(name) || tg_py_resolve_guards() < 0) {
        tg_py.PyErr_Clear();
        tg_py.Py_IncRef(tg_py.none);
        return tg_py.none;
    }
    const struct tg_core_api *core = tg_core_load();
    if (!core) { /* said once; the import goes on unguarded */
        tg_py.Py_IncRef(tg_py.none);
        return tg_py.none;
    }
    return core->arm_find_target_spec(fullname, vc_arg(args, nargs, kwnames, 1, "path"),
                                      vc_arg(args, nargs, kwnames, 2, "target"));
}
/* importlib.invalidate_caches() calls this on every finder that has it. */
TG_STARTUP static PyObject *invalidate_caches(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    tg_py.Py_IncRef(tg_py.none);
    return tg_py.none;
}

TG_STARTUP static PyObject *finder_repr(PyObject *self)
{
    (void)self;
    return tg_py.PyUnicode_FromString("<tunerguard finder: guards the tuners of modules named in targets>");
}

/* The finder's type, made from a spec (PyType_FromSpec: stable since 3.2, no
 * import, no module): an ordinary hashable object with find_spec and
 * invalidate_caches, a repr and a type named tunerguard.Finder.  The layout
 * below is the C API's stable ABI (PyType_Spec, PyType_Slot, typeslots.h). */
static PyMethodDef finder_methods[] = {
    {txt_find_spec, (void *)find_spec, TG_METH_FASTCALL | TG_METH_KEYWORDS,
     "find_spec(fullname, path, target=None): None, except for a module named in tunerguard's targets"},
    {txt_invalidate_caches, (void *)invalidate_caches, TG_METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
struct tg_type_slot {
    int slot;
    void *pfunc;
};
struct tg_type_spec {
    const char *name;
    int basicsize, itemsize; /* 0: object's */
    unsigned int flags;
    struct tg_type_slot *slots;
};
#define TG_TP_DOC 56
#define TG_TP_METHODS 64
#define TG_TP_REPR 66
#define TG_TPFLAGS_DEFAULT (1UL << 18) /* Py_TPFLAGS_HAVE_VERSION_TAG: set or implied on 3.9-3.13 */
static struct tg_type_slot finder_slots[] = {
    {TG_TP_DOC, (void *)txt_finder_doc},
    {TG_TP_METHODS, finder_methods},
    {TG_TP_REPR, (void *)finder_repr},
    {0, NULL},
};
static struct tg_type_spec finder_spec = {txt_finder_name, 0, 0, TG_TPFLAGS_DEFAULT, finder_slots};

TG_STARTUP void tg__arm_install_finder(void)
{
    PyObject *type = tg_py.PyType_FromSpec(&finder_spec);
    PyObject *noargs = type ? tg_py.PyTuple_Pack(0) : NULL;
    /* PyObject_Call, not PyObject_CallObject: the same window reason as
     * tg_py_decref */
    PyObject *finder = noargs ? tg_py.PyObject_Call(type, noargs, NULL) : NULL;
    if (noargs)
        tg_py_decref(noargs);
    PyObject *sys = tg_py.PyImport_AddModule(txt_sys); /* borrowed; always there */
    PyObject *meta = sys ? tg_py.PyObject_GetAttrString(sys, txt_meta_path) : NULL;
    if (finder && meta && tg_py.PyList_Insert(meta, 0, finder) == 0) {
        tg__arm_finder_self = finder; /* identity only: the list holds it */
    } else {
        tg_py.PyErr_Clear();
        tg__info(1, "could not add the import finder; targets are found through audit events only");
    }
    if (finder)
        tg_py_decref(finder);
    if (meta)
        tg_py_decref(meta);
    if (type)
        tg_py_decref(type); /* the instance holds its type */
    tg_py.PyErr_Clear();
}
