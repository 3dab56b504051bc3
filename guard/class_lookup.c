/* What the guard reads of a class or a function when it installs: a class
 * reference that keeps nothing alive, the built-in tuner family a class
 * derives from, whether tuning= names its step, a class's own attribute, a
 * function's kind (a deferred body, abstract) and its doc, a type's name;
 * and the once per class of the lines that say an entry point runs
 * unguarded.  C API look-ups only, no guard state: the files that install
 * (guard_install.c, tuning_marks.c, run_shapes.c, guard_setattr.c) share
 * them.
 *
 * Everything here: an attached thread under the install lock; install time
 * only, never on a guarded call. */
#include "guard/install_internal.h"
#include "core/builtin_tuners.h"
#include "core/py_attr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A reference to class cls: a weak one (*weak = 1), so that the holder
 * keeps the class alive no longer than the program does, else (a class
 * that takes none) a strong one.  Install lock held. */
PyObject *tg__class_ref(PyObject *cls, int *weak)
{
    PyObject *r = tg_py.PyWeakref_NewRef(cls, NULL);
    *weak = r != NULL;
    if (!r) {
        tg_py.PyErr_Clear();
        r = cls;
        tg_py.Py_IncRef(cls);
    }
    return r;
}

/* Is module.qualname in cls.__mro__?  Install time only. */
static int derives_from(PyObject *cls, const char *module, const char *qualname)
{
    PyObject *mro = tg_py.PyObject_GetAttrString(cls, "__mro__");
    Py_ssize_t n = mro ? tg_py.PyTuple_Size(mro) : 0;
    int found = 0;
    for (Py_ssize_t i = 0; i < n && !found; i++) {
        PyObject *c = tg_py.PyTuple_GetItem(mro, i); /* borrowed */
        char mod[TG_TARGET_MODULE_MAX + 2], qual[TG_TARGET_CLASS_MAX + 2];
        tg_py_attr_str(c, "__module__", mod, sizeof mod);
        tg_py_attr_str(c, "__qualname__", qual, sizeof qual);
        found = strcmp(mod, module) == 0 && strcmp(qual, qualname) == 0;
    }
    if (mro)
        tg_py.Py_DecRef(mro);
    tg_py.PyErr_Clear();
    return found;
}

/* The built-in tuner family (core/builtin_tuners.inc) cls is or derives
 * from, -1 for none.  Install lock held; install time only. */
int tg__builtin_family(PyObject *cls)
{
    for (int f = 0; f < TG_TUNER_NFAMILIES; f++)
        if (derives_from(cls, tg_tuner_family(f)->module, tg_tuner_family(f)->cls))
            return f;
    return -1;
}

/* See guard/py_guard.h: its type's flags say it is a type (Py_TPFLAGS_TYPE_SUBCLASS,
 * set on type and every metaclass).  A module or an instance named where a
 * class belongs (targets=pkg:mod.run) would reach PyDescr_NewMethod, whose
 * descriptor then crashes the call that type-checks self against it. */
#define TG_TPFLAGS_TYPE_SUBCLASS (1UL << 31)
int tg_guard_is_class(PyObject *cls)
{
    PyObject *type = tg_py.PyObject_Type(cls);
    int yes = type && (tg_py.PyType_GetFlags(type) & TG_TPFLAGS_TYPE_SUBCLASS);
    if (type)
        tg_py.Py_DecRef(type);
    return yes;
}

/* Does cls derive from a class whose tuning step tuning= names?  Install
 * time only. */
int tg__names_tuning_step(PyObject *cls)
{
    int found = 0;
    struct tg_target_span step;
    for (const char *p = tg_opts.tuning; !found && tg_target_next(&p, &step);) {
        char mod[TG_TARGET_MODULE_MAX + 1], qual[TG_TARGET_CLASS_MAX + 1];
        if (step.colon && step.dot) { /* the option parser checked the shape and the sizes */
            snprintf(mod, sizeof mod, "%.*s", (int)(step.colon - step.text), step.text);
            snprintf(qual, sizeof qual, "%.*s", (int)(step.dot - step.colon - 1), step.colon + 1);
            found = derives_from(cls, mod, qual);
        }
    }
    return found;
}

/* cls's own attribute key (from its __dict__, not inherited): a new
 * reference, or NULL with no error set; tname gets its type's name ("" when
 * there is none).  Install lock held. */
PyObject *tg__own_attr(PyObject *cls, PyObject *key, char tname[64])
{
    PyObject *dict = tg_py.PyObject_GetAttrString(cls, "__dict__");
    PyObject *value = dict && key ? tg_py.PyObject_GetItem(dict, key) : NULL; /* a mappingproxy */
    tg_py.PyErr_Clear();
    if (dict)
        tg_py.Py_DecRef(dict);
    tname[0] = '\0';
    if (value) {
        PyObject *type = tg_py.PyObject_Type(value);
        tg_py_attr_str(type, "__name__", tname, 64);
        if (type)
            tg_py.Py_DecRef(type);
    }
    return value;
}

/* The type's name of value into tname (64 bytes; "" when there is none). */
void tg__type_name(PyObject *value, char tname[64])
{
    PyObject *type = tg_py.PyObject_Type(value);
    tname[0] = '\0';
    tg_py_attr_str(type, "__name__", tname, 64);
    if (type)
        tg_py.Py_DecRef(type);
}

/* What fn is when its body does not run in its call (a coroutine, an async
 * generator or a generator function: the call only makes the object that
 * runs the body later), else NULL.  Install lock held. */
const char *tg__deferred_body(PyObject *fn)
{
    if (!tg_py.PyLong_AsLong)
        return NULL;
    PyObject *code = tg_py.PyObject_GetAttrString(fn, "__code__");
    PyObject *flags = code ? tg_py.PyObject_GetAttrString(code, "co_flags") : NULL;
    long f = flags ? tg_py.PyLong_AsLong(flags) : 0;
    if (flags)
        tg_py.Py_DecRef(flags);
    if (code)
        tg_py.Py_DecRef(code);
    tg_py_drop_error();
    if (f == -1)
        return NULL;
    if (f & 0x80) /* CO_COROUTINE */
        return "a coroutine function (async def)";
    if (f & 0x200) /* CO_ASYNC_GENERATOR */
        return "an async generator function";
    if (f & 0x20) /* CO_GENERATOR (also a types.coroutine) */
        return "a generator function";
    return NULL;
}

/* Is fn marked abstract (@abc.abstractmethod)?  A function's attribute,
 * read from its dict: no Python code runs.  Install lock held. */
int tg__is_abstract(PyObject *fn)
{
    PyObject *v = tg_py.PyObject_IsTrue ? tg_py.PyObject_GetAttrString(fn, "__isabstractmethod__") : NULL;
    int yes = v && tg_py.PyObject_IsTrue(v) == 1;
    if (v)
        tg_py.Py_DecRef(v);
    tg_py.PyErr_Clear();
    return yes;
}

/* g's def.ml_doc, malloc'd: "run($self, /, *args, **kwargs)\n--\n\n", what
 * inspect.signature() reads from a method descriptor (the arguments pass
 * through unchanged), then the function's own docstring, which the
 * descriptor's __doc__ gives (help(), doctest).  NULL when out of memory. */
char *tg__descr_doc(const char *name, PyObject *fn)
{
    PyObject *d = tg_py.PyObject_GetAttrString(fn, "__doc__");
    const char *text = d && d != tg_py.none ? tg_py.PyUnicode_AsUTF8(d) : NULL;
    tg_py_drop_error();
    size_t n = strlen(name) + 40 + (text ? strlen(text) : 0);
    char *doc = malloc(n);
    if (doc)
        snprintf(doc, n, "%s($self, /, *args, **kwargs)\n--\n\n%s", name, text ? text : "");
    if (d)
        tg_py.Py_DecRef(d);
    return doc;
}

/* Was fn's refusal said already?  Notes it if not.  Identity only (no
 * reference): a function freed and another made at its address goes
 * unsaid, which costs a line, nothing more.  Install lock held. */
int tg__said_deferred(PyObject *fn)
{
    static const void *said[32];
    static unsigned nsaid;
    for (unsigned i = 0; i < nsaid && i < 32; i++)
        if (said[i] == fn)
            return 1;
    said[nsaid++ % 32] = fn;
    return 0;
}

/* Was cls's unguarded entry said already?  Notes it if not.  Identity only:
 * a class freed and another made at its address goes unsaid. */
int tg__said_for_class(PyObject *cls)
{
    static const void *said[64];
    static unsigned nsaid;
    for (unsigned i = 0; i < nsaid && i < 64; i++)
        if (said[i] == cls)
            return 1;
    said[nsaid++ % 64] = cls;
    return 0;
}
