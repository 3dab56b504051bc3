/* The guard mechanism.  Where the interpreter honours a function's
 * vectorcall slot on every call (3.9, 3.10, 3.12+: 3.12's specializer and
 * inliner check it, and PyFunction_SetVectorcall keeps the function from
 * being specialized), a guard is the function's own vectorcall: the
 * function stays in the class dict, so `Class.method` is the very function
 * object it was (inspect.getsource, __code__, __func__, isfunction, the
 * signature, `class Duck: run = Class.run`, MagicMock(spec=...) see no
 * difference), and every call of it, from bytecode or from C, passes through
 * its trampoline (one per guard slot), which hands its guard to
 * tg__guard_vcall (guard/session.c).
 *
 * Elsewhere (3.11 inlines every Python-to-Python call without looking at
 * the slot; a Cython function) a guard is a method descriptor
 * (PyDescr_NewMethod, METH_FASTCALL | METH_KEYWORDS) put on the class in
 * place of the function.  Like the function it binds to instances,
 * `Class.method(obj, ...)` works, and `Class.method` read and assigned back
 * (the save/patch/restore pattern of monkey-patches) is the same descriptor
 * again; its trampoline passes its guard to tg__guard_entry.  Here too: the
 * check that a guarded method was replaced by user code (guarded again,
 * reported at verbosity>=1).
 *
 * Everything here runs with the thread attached.  Where threads run at once
 * (docs/free-threading.md's table): installs hold the install lock
 * (guard/install_lock.c); a slot is filled before nguards publishes it (a
 * release store); orig_vc and descr, which tg_guard_is_ours reads without
 * the lock, are stored whole (clear_slot); a guard's counters and flags
 * written after its install are relaxed atomics. */
#include "guard/install_internal.h"
#include "guard/lifecycle.h"
#include "core/builtin_tuners.h"
#include "core/log.h"
#include "core/options.h"
#include "core/py_attr.h"
#include "core/py_ref.h"
#include "core/thread_state.h"
#include "reports/emit.h"
#include "reports/fatal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tg_guard guards[TG_MAX_GUARDS];
static int nguards; /* slots ever taken: guards[0 .. nguards); written under the install lock
                       with a release store once the slot is filled, read with acquire */

/* The published slots' count (see nguards). */
static inline int nguards_pub(void)
{
    return __atomic_load_n(&nguards, __ATOMIC_ACQUIRE);
}

/* An object's type (borrowed), the header's last word (core/py_api.h). */
static inline PyObject *type_of(PyObject *o)
{
    return tg_py_type_of(o);
}

/* ---- replaced methods --------------------------------------------------------
 *
 * CPython raises no audit event for a plain class attribute assignment, so
 * `Autotuner.run = my_locked_run` (seeds/001) is found where it shows: the
 * replacement, if it chains to the original, calls this guard with the class
 * attribute no longer being ours.  The check costs one getattr on the class;
 * it runs on every outermost call for the first 1024 calls of a guard (when
 * monkey-patches happen: at start-up), then on one outermost call in 64,
 * drawn at random on the thread (tg__guard_check_replaced,
 * guard/guard_internal.h). */
static int install(PyObject *cls, const char *name, const char *why, int marker, int declared);
static int install_at(PyObject *cls, const char *name, const char *why, int marker, int declared,
                      const struct tg_guard_at *at);

/* Guard cls.<g's name>, now `cur` (the program's own), as a replacement of
 * g: where it is defined, said at verbosity>=1.  in_call: found from inside
 * a call of g's guard, whose caller (the frame calling it) may be the
 * replacement itself, chaining to the original (a wrapper: its calls pass
 * through from now on); else that is learnt at its first call (session.c,
 * TG_NESTED).  The caller is busy. */
static void guard_replacement(struct tg_guard *g, PyObject *cls, PyObject *cur, int in_call)
{
    char where[300] = "";
    /* Each look-up may fail (a callable object has no __code__): its
     * error cleared before the next call into the C API. */
    PyObject *code = tg_py.PyObject_GetAttrString(cur, "__code__");
    if (!code)
        tg_py_drop_error();
    PyObject *file = code ? tg_py.PyObject_GetAttrString(code, "co_filename") : NULL;
    if (!file)
        tg_py_drop_error();
    PyObject *line = code ? tg_py.PyObject_GetAttrString(code, "co_firstlineno") : NULL;
    if (!line)
        tg_py_drop_error();
    PyObject *qn = tg_py.PyObject_GetAttrString(cur, "__qualname__");
    const char *fs = file ? tg_py.PyUnicode_AsUTF8(file) : NULL;
    const char *qs = qn ? tg_py.PyUnicode_AsUTF8(qn) : NULL;
    tg_py_drop_error();
    PyObject *ls = line ? tg_py.PyObject_Str(line) : NULL;
    const char *lstr = ls ? tg_py.PyUnicode_AsUTF8(ls) : NULL;
    if (fs)
        snprintf(where, sizeof where, " by %s defined at %s:%s", qs ? qs : "?", fs, lstr ? lstr : "?");
    tg_py_drop_error();
    /* Guard it on the class that holds the attribute now.  g's names are
     * kept first: the replaced function may be gone with the assignment,
     * and its slot taken by the new guard. */
    struct tg_guard old = *g;
    g = &old;
    /* A mixin's guard serves its tuner family only: so does its replacement. */
    struct tg_guard_at at = {.family = g->family ? tg__class_of_ref(g->family, g->family_weak) : NULL,
                             .replacement = 1, .where = where};
    if (in_call) {
        /* Known before the new guard is published: its first call may come
         * from another thread at once. */
        PyFrameObject *f = tg_py.PyThreadState_GetFrame(tg_py.PyThreadState_Get());
        PyObject *fc = f ? tg_py.PyFrame_GetCode(f) : NULL;
        at.chains = code && fc == code;
        if (fc)
            tg_py.Py_DecRef(fc);
        if (f)
            tg_py.Py_DecRef((PyObject *)f);
    }
    int put = install_at(cls, g->name, "replaced by user code", 0, g->declared, &at);
    if (at.family)
        tg_py.Py_DecRef(at.family);
    if (put > 0) {
        tg__info(1, "%s was replaced%s; the new one is guarded too", g->method, where);
        if (tg_opts.verbosity >= 1)
            tg__report_replaced(g, qs, fs, lstr);
    }
    PyObject *objs[] = {ls, qn, line, file, code};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
        if (objs[i])
            tg_py.Py_DecRef(objs[i]);
    tg_py_drop_error();
}

/* The type of the method descriptors descriptor guards put on classes
 * (borrowed: a static type), learnt from the first.  A method descriptor
 * is PyDescr_COMMON (the object header, d_type, d_name, d_qualname) and
 * then d_method, the same from 3.9 to 3.15 and in 3.13t/3.14t: it is a
 * guard's when d_method is that guard's PyMethodDef. */
static PyObject *method_descr_type;

static inline const void *descr_def(PyObject *value)
{
    return *(void **)tg_py_field(value, 3); /* 40 with a GIL, 56 free-threaded */
}

/* Is value g's own method descriptor? */
static int descr_is_guard(PyObject *value, const struct tg_guard *g)
{
    PyObject *mt = __atomic_load_n(&method_descr_type, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&g->descr, __ATOMIC_RELAXED) && mt && type_of(value) == mt && descr_def(value) == &g->def;
}

void tg__guard_check_replaced_slow(struct tg_guard *g)
{
    if (g->off_class) /* cls.<name> is not the function (a partialmethod, the class's own run) */
        return;
    PyObject *cls = tg__guard_cls(g);
    PyObject *cur = cls ? tg_py.PyObject_GetAttr(cls, g->pyname) : NULL;
    if (!cur) {
        tg_py_drop_error();
        tg__class_drop(cls);
        return;
    }
    if (!descr_is_guard(cur, g) && !tg_guard_is_ours(cur)) /* the first test: its own descriptor, the usual answer */
        guard_replacement(g, cls, cur, 1);
    tg_py.Py_DecRef(cur);
    tg__class_drop(cls);
}

void tg__guard_class_setattr(PyObject *cls, PyObject *name, PyObject *value)
{
    if (tg_opts.mode == TG_MODE_OFF || tg_guard_is_ours(value))
        return;
    struct tg_thread *t = tg__self();
    if (t->busy || nguards_pub() == 0)
        return;
    const char *n = NULL;
    tg__install_lock(); /* the slots' names and classes; an install */
    for (int i = 0; i < nguards; i++) {
        struct tg_guard *g = &guards[i];
        if (g->pyname != name) {
            if (!n && !(n = tg_py.PyUnicode_AsUTF8(name))) {
                tg_py.PyErr_Clear();
                break;
            }
            if (strcmp(n, g->name) != 0)
                continue;
        }
        PyObject *gc = tg__guard_cls(g);
        int sub = gc && tg_py.PyType_IsSubtype(cls, gc); /* runs no Python code */
        tg__class_drop(gc);
        if (!sub)
            continue;
        t->busy++;
        if (g->marker) /* a tuning method replaced: the new one says when a thread tunes */
            install(cls, g->name, "tuning method replaced by user code", 1, g->declared);
        else
            guard_replacement(g, cls, value, 0);
        t->busy--;
        break;
    }
    tg__install_unlock();
}

/* ---- the trampolines -------------------------------------------------------- */

/* One trampoline per guard slot and kind: 256 of each, named by the slot's
 * four base-4 digits (tramp_0000 .. tramp_3333; vtramp_ for the vectorcall
 * slot). */
#define TG_TRAMP(a, b, c, d)                                                                          \
    static PyObject *tramp_##a##b##c##d(PyObject *self, PyObject *const *v, Py_ssize_t n, PyObject *k) \
    {                                                                                                 \
        return tg__guard_entry(&guards[a * 64 + b * 16 + c * 4 + d], self, v, n, k);                      \
    }                                                                                                 \
    static PyObject *vtramp_##a##b##c##d(PyObject *f, PyObject *const *v, size_t n, PyObject *k)       \
    {                                                                                                 \
        return tg__guard_vcall(&guards[a * 64 + b * 16 + c * 4 + d], f, v, n, k);                         \
    }
#define TG_TRAMP4(a, b, c) TG_TRAMP(a, b, c, 0) TG_TRAMP(a, b, c, 1) TG_TRAMP(a, b, c, 2) TG_TRAMP(a, b, c, 3)
#define TG_TRAMP16(a, b) TG_TRAMP4(a, b, 0) TG_TRAMP4(a, b, 1) TG_TRAMP4(a, b, 2) TG_TRAMP4(a, b, 3)
#define TG_TRAMP64(a) TG_TRAMP16(a, 0) TG_TRAMP16(a, 1) TG_TRAMP16(a, 2) TG_TRAMP16(a, 3)
TG_TRAMP64(0) TG_TRAMP64(1) TG_TRAMP64(2) TG_TRAMP64(3)
#define TG_REF(p, a, b, c, d) (void *)p##tramp_##a##b##c##d,
#define TG_REF4(p, a, b, c) TG_REF(p, a, b, c, 0) TG_REF(p, a, b, c, 1) TG_REF(p, a, b, c, 2) TG_REF(p, a, b, c, 3)
#define TG_REF16(p, a, b) TG_REF4(p, a, b, 0) TG_REF4(p, a, b, 1) TG_REF4(p, a, b, 2) TG_REF4(p, a, b, 3)
#define TG_REF64(p, a) TG_REF16(p, a, 0) TG_REF16(p, a, 1) TG_REF16(p, a, 2) TG_REF16(p, a, 3)
static void *const trampolines[TG_MAX_GUARDS] = {TG_REF64(, 0) TG_REF64(, 1) TG_REF64(, 2) TG_REF64(, 3)};
static void *const vtrampolines[TG_MAX_GUARDS] = {TG_REF64(v, 0) TG_REF64(v, 1) TG_REF64(v, 2) TG_REF64(v, 3)};

/* ---- the vectorcall slot: guard/vc_slot.c ---------------------------------- */

/* The vectorcall guard whose trampoline is in value's slot, or NULL. */
static struct tg_guard *vc_guard_of(PyObject *value)
{
    void **slot = tg__vc_slot_of(value);
    if (!slot)
        return NULL;
    void *vc = __atomic_load_n(slot, __ATOMIC_RELAXED);
    for (int i = 0, n = nguards_pub(); i < n; i++)
        if (vtrampolines[i] == vc && __atomic_load_n(&guards[i].orig_vc, __ATOMIC_RELAXED))
            return &guards[i];
    return NULL;
}

/* ---- installing guards ------------------------------------------------------ */

int tg_guard_count(void)
{
    return nguards_pub();
}

const struct tg_guard *tg__guard_at(int i)
{
    return i >= 0 && i < nguards_pub() ? &guards[i] : NULL;
}

/* The descriptor guard whose method descriptor value is, or NULL. */
static struct tg_guard *descr_guard_of(PyObject *value)
{
    PyObject *mt = __atomic_load_n(&method_descr_type, __ATOMIC_ACQUIRE);
    if (!mt || type_of(value) != mt)
        return NULL;
    for (int i = 0, n = nguards_pub(); i < n; i++)
        if (descr_is_guard(value, &guards[i]))
            return &guards[i];
    return NULL;
}

int tg_guard_is_ours(PyObject *value)
{
    return descr_guard_of(value) != NULL || vc_guard_of(value) != NULL;
}

/* Guard g (slot i, filled but for the mechanism) as a method descriptor
 * put on cls in place of value.  0, or -1 with one line said (nothing
 * changed then). */
static int install_descriptor(struct tg_guard *g, int i, PyObject *cls, PyObject *value, const char *tname,
                              PyObject *holder)
{
    g->def.ml_name = g->name;
    g->def.ml_meth = trampolines[i];
    g->def.ml_flags = TG_METH_FASTCALL | TG_METH_KEYWORDS;
    g->doc = tg__descr_doc(g->name, value);
    g->def.ml_doc = g->doc;
    PyObject *wrapper = g->doc ? tg_py.PyDescr_NewMethod(cls, &g->def) : NULL;
    if (!wrapper) {
        tg_py.PyErr_Clear();
        tg__warn("could not guard %s.%s; it runs unguarded", g->cls_name, g->name);
        free(g->doc);
        return -1;
    }
    g->orig = value;
    g->orig_is_function = strcmp(tname, "function") == 0;
    tg_py.Py_IncRef(value);
    if (!method_descr_type)
        __atomic_store_n(&method_descr_type, type_of(wrapper), __ATOMIC_RELEASE);
    __atomic_store_n(&g->descr, 1, __ATOMIC_RELAXED);
    int rc = holder ? tg_py.PyObject_SetAttrString(holder, "func", wrapper) : tg__type_setattr(cls, g->pyname, wrapper);
    tg_py.Py_DecRef(wrapper); /* the class (or the holder) holds it; ours is known by its d_method */
    if (rc < 0) {
        tg_py.PyErr_Clear();
        tg__warn("could not set %s.%s; it runs unguarded", g->cls_name, g->name);
        tg_py.Py_DecRef(value);
        free(g->doc);
        return -1;
    }
    return 0;
}

/* The descriptor guard of function value as cls.<name>, put back on cls
 * after a replacement (a test's patch undone, the same patch made again):
 * guarded by its slot again, not a new one per assignment.  The install lock held. */
static struct tg_guard *descr_guard_for(PyObject *cls, const char *name, PyObject *value, int marker)
{
    for (int i = 0; i < nguards; i++) {
        struct tg_guard *g = &guards[i];
        if (g->descr && g->orig == value && g->marker == marker && strcmp(g->name, name) == 0) {
            PyObject *gc = tg__guard_cls(g);
            tg__class_drop(gc);
            if (gc == cls) /* identity only */
                return g;
        }
    }
    return NULL;
}

/* Put a new method descriptor of g's on cls: 1, or -1 with one line. */
static int reinstall_descriptor(struct tg_guard *g, PyObject *cls)
{
    PyObject *wrapper = tg_py.PyDescr_NewMethod(cls, &g->def);
    int rc = wrapper ? tg__type_setattr(cls, g->pyname, wrapper) : -1;
    if (wrapper)
        tg_py.Py_DecRef(wrapper);
    if (rc < 0) {
        tg_py.PyErr_Clear();
        tg__warn("could not set %s.%s; it runs unguarded", g->cls_name, g->name);
        return -1;
    }
    tg__info(2, "%s %s again (its function put back)", g->marker ? "marking" : "guarding", g->method);
    return 1;
}

/* A slot for a new guard: the next never taken, else one whose vectorcall
 * guard's function was freed (its vectorcall slot was the one place that
 * held the slot's trampoline), its references given back.  A descriptor
 * guard keeps its slot: a bound method taken from it (`f = tuner.run`,
 * `Thread(target=tuner.run)`) points at its PyMethodDef, and so at the
 * slot's trampoline, without holding the descriptor, so no reference
 * count says when the slot is free.  -1 when all are in use (a program
 * that patches in a new function over and over and keeps them).  The install lock held. */
static void clear_slot(struct tg_guard *g)
{
    /* tg_guard_is_ours reads orig_vc and descr without the install lock:
     * stored whole; the rest of the slot only the lock's holder reads. */
    __atomic_store_n(&g->orig_vc, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&g->descr, 0, __ATOMIC_RELAXED);
    const size_t from = offsetof(struct tg_guard, orig);
    memset((char *)g + from, 0, sizeof *g - from);
}

/* The install lock held. */
static int freed_slot(void);
static int free_slot(void)
{
    static int collected_none; /* the last collection freed no slot */
    if (nguards < TG_MAX_GUARDS)
        return nguards;
    int i = freed_slot();
    /* A free-threaded build defers the reference counts of functions made
     * outside a function (a module's `lambda`, `def`): the collector alone
     * frees them.  A program that patches in such functions over and over
     * (mock.patch.object in a loop) would fill every slot with dead ones. */
    if (i < 0 && tg_py.free_threaded && tg_py.PyGC_Collect && !collected_none) {
        tg_py.PyGC_Collect(); /* keeps the error set, if any */
        i = freed_slot();
    }
    collected_none = i < 0;
    return i;
}

/* free_slot's search: a slot left empty, or one whose function was freed. */
static int freed_slot(void)
{
    for (int i = 0; i < TG_MAX_GUARDS; i++) {
        struct tg_guard *g = &guards[i];
        if (!g->cls && !g->descr && !g->orig_vc)
            return i; /* left empty by an install that failed */
        PyObject *fn = g->fn_weak ? tg_py_weakref_get(g->fn_weak) : NULL;
        if (!g->fn_weak || fn) {
            tg__class_drop(fn); /* alive: the slot is taken */
            continue;
        }
        /* Emptied first, released after: a release may run code that
         * installs (a class freed with the last reference). */
        PyObject *refs[] = {g->fn_weak, g->cls, g->pyname, g->orig_code, g->family};
        clear_slot(g);
        for (size_t r = 0; r < sizeof refs / sizeof refs[0]; r++)
            if (refs[r])
                tg_py.Py_DecRef(refs[r]);
        if (!guards[i].cls && !guards[i].descr && !guards[i].orig_vc)
            return i;
    }
    return -1;
}

static int install(PyObject *cls, const char *name, const char *why, int marker, int declared)
{
    return install_at(cls, name, why, marker, declared, NULL);
}

/* install(), and where `at` says: the function at->value (else cls's own
 * attribute), set as at->holder's func where a descriptor guard must be put
 * somewhere (else on cls; nowhere with at->vc_only: then 0), serving
 * instances of at->family only. */
static int install_at_locked(PyObject *cls, const char *name_in, const char *why, int marker, int declared,
                             const struct tg_guard_at *at);
static int install_at(PyObject *cls, const char *name_in, const char *why, int marker, int declared,
                      const struct tg_guard_at *at)
{
    if (!tg_guard_is_class(cls))
        return 0; /* said by the caller (targets=: say_unguarded) */
    tg__install_lock();
    int rc = install_at_locked(cls, name_in, why, marker, declared, at);
    tg__install_unlock();
    return rc;
}

static int install_at_locked(PyObject *cls, const char *name_in, const char *why, int marker, int declared,
                             const struct tg_guard_at *at)
{
    int rc = 0;
    PyObject *holder = at ? at->holder : NULL, *family = at ? at->family : NULL;
    /* The class whose kind the guard takes (Triton's, Inductor's, a
     * declared one): the family's for a mixin's function. */
    PyObject *kind = family ? family : cls;
    /* Copied: name_in may be a guard's own name (a replacement of it), and
     * that guard's slot may be the one free_slot empties for this one. */
    char name[sizeof guards[0].name];
    snprintf(name, sizeof name, "%s", name_in);
    PyObject *key = tg_py.PyUnicode_FromString(name);
    char tname[64];
    PyObject *value;
    if (at && at->value) {
        value = at->value;
        tg_py.Py_IncRef(value);
        tg__type_name(value, tname);
    } else {
        value = tg__own_attr(cls, key, tname);
    }
    if (!value || tg_guard_is_ours(value))
        goto done;
    /* Only plain functions: a staticmethod, classmethod or property is not a
     * per-instance entry point, and neither is a builtin function put in a
     * class body (`run = len`): it is no descriptor, so it never binds self,
     * and a guard, which binds, would hand it one argument too many. */
    if (strcmp(tname, "function") != 0 && strcmp(tname, "cython_function_or_method") != 0)
        goto done;
    const char *deferred = strcmp(tname, "function") == 0 ? tg__deferred_body(value) : NULL;
    if (deferred) {
        if (!tg__said_deferred(value)) { /* a replacement is found again at later calls of the original */
            char mod[96], qual[160];
            tg_py_attr_str(cls, "__module__", mod, sizeof mod);
            tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
            tg__warn("%s:%s.%s is %s: its call returns before its body runs, so no call of it can be guarded; "
                     "nothing guarded (name the method that runs it)", mod, qual, name, deferred);
        }
        goto done;
    }
    struct tg_guard *again = holder || (at && at->vc_only) ? NULL : descr_guard_for(cls, name, value, marker);
    if (again) {
        rc = reinstall_descriptor(again, cls);
        goto done;
    }
    const int vc = strcmp(tname, "function") == 0 && tg__vc_usable(value);
    if (!vc && at && at->vc_only)
        goto done; /* nowhere to put a descriptor guard */
    if (!vc && tg__is_abstract(value)) {
        /* A descriptor has no __isabstractmethod__: put in the function's
         * place it would make an abstract class instantiable.  An abstract
         * method is never what a call runs but through super(), from an
         * override that is guarded. */
        char qual[96];
        tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
        tg__info(1, "%s.%s is abstract; not guarded (its overrides are)", qual, name);
        goto done;
    }
    const int i = free_slot();
    if (i < 0) {
        static unsigned said;
        tg__say_capped(&said, 1, 0, "more than %d guarded methods; %s and later ones are not guarded", TG_MAX_GUARDS,
                       name);
        rc = -1;
        goto done;
    }
    struct tg_guard *g = &guards[i];
    clear_slot(g);
    snprintf(g->name, sizeof g->name, "%s", name);
    char qual[96], mod[96];
    tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
    tg_py_attr_str(cls, "__module__", mod, sizeof mod);
    snprintf(g->method, sizeof g->method, "%s.%s", qual, name);
    snprintf(g->cls_name, sizeof g->cls_name, "%s.%s", mod, qual);
    g->orig_code = tg_py.PyObject_GetAttrString(value, "__code__");
    tg_py.PyErr_Clear();
    tg_py_attr_str(value, "__module__", g->fn_module, sizeof g->fn_module);
    /* The class by a weak reference: a guard keeps neither it nor (through
     * its dict) the function alive.  Strong where that fails. */
    g->cls = tg__class_ref(cls, &g->cls_weak);
    const int builtin = tg__builtin_family(kind);
    g->clears_args = builtin >= 0 && tg_tuner_family(builtin)->clears_args;
    g->marker = marker;
    g->tuning_entry = !marker && builtin >= 0 && tg_tuner_entry_tunes(builtin, name);
    g->reads_args = marker && g->clears_args && tg_tuner_step_reads_args(builtin, name);
    g->marked = builtin >= 0; /* every built-in family's tuning methods are marked */
    g->declared = declared && !g->marked; /* a built-in tuner's subclass keeps the built-in's rules */
    g->pyname = key;
    tg_py.Py_IncRef(key);
    g->off_class = holder != NULL || (at && at->vc_only);
    if (family)
        g->family = tg__class_ref(family, &g->family_weak);
    if (at && at->replacement) { /* guard_replacement's: known before the guard is published */
        g->replacement = 1;
        g->chains = at->chains;
        snprintf(g->where, sizeof g->where, "%s", at->where ? at->where : "");
    }
    /* Its tuning step named (tuning=) and marked on that class (arm_class
     * marks the steps before it guards the class's methods): races only
     * while a thread inside is in the step.  A step that could not be
     * marked (misspelled, no plain function) leaves every overlap a race,
     * as its one line says. */
    if (g->declared && !marker && tg_opts.tuning[0] && tg__names_tuning_step(kind) && tg__guard_has_markers(g))
        g->marked = 1;
    if (vc) {
        /* The function stays where it is, referenced weakly (the class holds it). */
        g->fn_weak = tg_py.PyWeakref_NewRef(value, NULL);
        tg_py.PyErr_Clear(); /* without one the slot stays taken */
        tg__vc_install(&g->orig_vc, value, vtrampolines[i]);
    } else if (install_descriptor(g, i, cls, value, tname, holder) < 0) {
        tg_py.Py_DecRef(g->cls);
        if (g->family)
            tg_py.Py_DecRef(g->family);
        tg_py.Py_DecRef(key);
        if (g->orig_code)
            tg_py.Py_DecRef(g->orig_code);
        clear_slot(g); /* the slot is free again */
        rc = -1;
        goto done;
    }
    if (i == nguards)
        __atomic_store_n(&nguards, nguards + 1, __ATOMIC_RELEASE); /* the slot filled first */
    __atomic_store_n(&tg__gstats.guards, nguards, __ATOMIC_RELAXED);
    tg__info(2, "%s %s (%s)", marker ? "marking" : "guarding", g->method, why);
    if (nguards == 1) { /* a process with something to guard: worth a crash report */
        tg_fatal_set_context(tg_mode_name(tg_opts.mode), tg_emit_seq_counter());
        tg_fatal_install(1);
        tg__guard_watch_setattr(); /* and replacements to guard (guard/guard_setattr.c) */
    }
    rc = 1;
done:
    if (value)
        tg_py.Py_DecRef(value);
    if (key)
        tg_py.Py_DecRef(key);
    tg_py.PyErr_Clear();
    return rc;
}

int tg_guard_install(PyObject *cls, const char *name, const char *why, int declared)
{
    return install(cls, name, why, 0, declared);
}

int tg__guard_install_at(PyObject *cls, const char *name, const char *why, int declared, const struct tg_guard_at *at)
{
    return install_at(cls, name, why, 0, declared, at);
}

int tg__guard_install_marker(PyObject *cls, const char *name, const char *why, int declared)
{
    return install(cls, name, why, 1, declared);
}

int tg__guard_serves(const struct tg_guard *g, PyObject *inst)
{
    PyObject *family = tg__class_of_ref(g->family, g->family_weak);
    int serves = family && tg_py.PyType_IsSubtype(type_of(inst), family);
    tg__class_drop(family);
    return serves;
}
