/* The guard mechanism: a guard is a method descriptor (PyDescr_NewMethod,
 * METH_FASTCALL | METH_KEYWORDS) put on the class in place of the Python
 * function.  Like the function it replaces it binds to instances,
 * `Class.method(obj, ...)` works, and `Class.method` read and assigned back
 * (the save/patch/restore pattern of monkey-patches) is the same descriptor
 * again.  A method descriptor's C function gets no data pointer, so each guard
 * has its own trampoline (a fixed table of TG_MAX_GUARDS tiny functions) that
 * passes its guard to tg__guard_entry (guard/session.c), where the call's
 * policy is.  Here too: the check that a guarded method was replaced by user
 * code (guarded again, reported at verbosity>=1).
 *
 * Everything here runs with the GIL held. */
#include "guard/guard_internal.h"
#include "guard/lifecycle.h"
#include "core/log.h"
#include "core/options.h"
#include "core/py_attr.h"
#include "reports/emit.h"
#include "reports/fatal.h"

#include <stdio.h>
#include <string.h>

static struct tg_guard guards[TG_MAX_GUARDS];
static int nguards;

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
void tg__guard_check_replaced_slow(struct tg_guard *g)
{
    PyObject *cur = tg_py.PyObject_GetAttr(g->cls, g->pyname);
    if (!cur) {
        tg_py_drop_error();
        return;
    }
    if (cur != g->wrapper && !tg_guard_is_ours(cur)) {
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
        /* Guard it on the class that holds the attribute now. */
        if (tg_guard_install(g->cls, g->name, "replaced by user code") > 0) {
            struct tg_guard *ng = &guards[nguards - 1];
            ng->replacement = 1;
            snprintf(ng->where, sizeof ng->where, "%s", where);
            /* Found from inside the original's guard: if the frame calling
             * it is the replacement itself, the replacement chains to the
             * original (a wrapper): its calls pass through from now on. */
            PyFrameObject *f = tg_py.PyThreadState_GetFrame(tg_py.PyThreadState_Get());
            PyObject *fc = f ? tg_py.PyFrame_GetCode(f) : NULL;
            ng->chains = code && fc == code;
            if (fc)
                tg_py.Py_DecRef(fc);
            if (f)
                tg_py.Py_DecRef((PyObject *)f);
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
    tg_py.Py_DecRef(cur);
}

/* ---- the trampolines -------------------------------------------------------- */

/* One trampoline per guard slot: 256 of them, named by the slot's four
 * base-4 digits (tramp_0000 .. tramp_3333). */
#define TG_TRAMP(a, b, c, d)                                                                          \
    static PyObject *tramp_##a##b##c##d(PyObject *self, PyObject *const *v, Py_ssize_t n, PyObject *k) \
    {                                                                                                 \
        return tg__guard_entry(&guards[a * 64 + b * 16 + c * 4 + d], self, v, n, k);                      \
    }
#define TG_TRAMP4(a, b, c) TG_TRAMP(a, b, c, 0) TG_TRAMP(a, b, c, 1) TG_TRAMP(a, b, c, 2) TG_TRAMP(a, b, c, 3)
#define TG_TRAMP16(a, b) TG_TRAMP4(a, b, 0) TG_TRAMP4(a, b, 1) TG_TRAMP4(a, b, 2) TG_TRAMP4(a, b, 3)
#define TG_TRAMP64(a) TG_TRAMP16(a, 0) TG_TRAMP16(a, 1) TG_TRAMP16(a, 2) TG_TRAMP16(a, 3)
TG_TRAMP64(0) TG_TRAMP64(1) TG_TRAMP64(2) TG_TRAMP64(3)
#define TG_REF(a, b, c, d) (void *)tramp_##a##b##c##d,
#define TG_REF4(a, b, c) TG_REF(a, b, c, 0) TG_REF(a, b, c, 1) TG_REF(a, b, c, 2) TG_REF(a, b, c, 3)
#define TG_REF16(a, b) TG_REF4(a, b, 0) TG_REF4(a, b, 1) TG_REF4(a, b, 2) TG_REF4(a, b, 3)
#define TG_REF64(a) TG_REF16(a, 0) TG_REF16(a, 1) TG_REF16(a, 2) TG_REF16(a, 3)
static void *const trampolines[TG_MAX_GUARDS] = {TG_REF64(0) TG_REF64(1) TG_REF64(2) TG_REF64(3)};

/* ---- installing guards ------------------------------------------------------ */

int tg_guard_count(void)
{
    return nguards;
}

const struct tg_guard *tg__guard_at(int i)
{
    return i >= 0 && i < nguards ? &guards[i] : NULL;
}

int tg_guard_is_ours(PyObject *value)
{
    for (int i = 0; i < nguards; i++)
        if (guards[i].wrapper == value)
            return 1;
    return 0;
}

/* Is module.qualname in cls.__mro__?  Install time only. */
static int derives_from(PyObject *cls, const char *module, const char *qualname)
{
    PyObject *mro = tg_py.PyObject_GetAttrString(cls, "__mro__");
    Py_ssize_t n = mro ? tg_py.PyTuple_Size(mro) : 0;
    int found = 0;
    for (Py_ssize_t i = 0; i < n && !found; i++) {
        PyObject *c = tg_py.PyTuple_GetItem(mro, i); /* borrowed */
        char mod[64], qual[48];
        tg_py_attr_str(c, "__module__", mod, sizeof mod);
        tg_py_attr_str(c, "__qualname__", qual, sizeof qual);
        found = strcmp(mod, module) == 0 && strcmp(qual, qualname) == 0;
    }
    if (mro)
        tg_py.Py_DecRef(mro);
    tg_py.PyErr_Clear();
    return found;
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

static int install(PyObject *cls, const char *name, const char *why, int marker)
{
    int rc = 0;
    if (!tg_guard_is_class(cls))
        return 0; /* said by the caller (targets=: say_unguarded) */
    tg_lifecycle_arm_fork(); /* from the first guard on, a fork child has state to reset */
    PyObject *dict = tg_py.PyObject_GetAttrString(cls, "__dict__");
    PyObject *key = tg_py.PyUnicode_FromString(name);
    PyObject *value = (dict && key) ? tg_py.PyObject_GetItem(dict, key) : NULL;
    tg_py.PyErr_Clear();
    if (!value || tg_guard_is_ours(value))
        goto done;
    /* Only plain functions: a staticmethod, classmethod or property is not a
     * per-instance entry point, and neither is a builtin function put in a
     * class body (`run = len`): it is no descriptor, so it never binds self,
     * and a guard, which binds, would hand it one argument too many. */
    PyObject *type = tg_py.PyObject_Type(value);
    char tname[64];
    tg_py_attr_str(type, "__name__", tname, sizeof tname);
    if (type)
        tg_py.Py_DecRef(type);
    if (strcmp(tname, "function") != 0 && strcmp(tname, "cython_function_or_method") != 0)
        goto done;
    if (nguards == TG_MAX_GUARDS) {
        /* Slots are never reused: a bound method taken from a guard (`f =
         * tuner.run`, `Thread(target=tuner.run)`) points at its PyMethodDef,
         * and so at its slot's trampoline, without holding the descriptor, so
         * no reference count says when a slot is free.  A program that patches
         * in a new function over and over fills the table; its later
         * replacements then run as they are (a wrapper that calls the original
         * is still guarded there).  One line, not one per replacement. */
        static int said;
        if (!said++)
            tg__warn("more than %d guarded methods; %s and later ones are not guarded", TG_MAX_GUARDS, name);
        rc = -1;
        goto done;
    }
    struct tg_guard *g = &guards[nguards];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    char qual[96], mod[96];
    tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
    tg_py_attr_str(cls, "__module__", mod, sizeof mod);
    snprintf(g->method, sizeof g->method, "%s.%s", qual, name);
    snprintf(g->cls_name, sizeof g->cls_name, "%s.%s", mod, qual);
    g->def.ml_name = g->name;
    g->def.ml_meth = trampolines[nguards];
    g->def.ml_flags = TG_METH_FASTCALL | TG_METH_KEYWORDS;
    /* "run($self, /, *args, **kwargs)\n--\n\n": what inspect.signature()
     * reads from a method descriptor; the arguments pass through unchanged. */
    snprintf(g->doc, sizeof g->doc, "%s($self, /, *args, **kwargs)\n--\n\n", name);
    g->def.ml_doc = g->doc;
    PyObject *wrapper = tg_py.PyDescr_NewMethod(cls, &g->def);
    if (!wrapper) {
        tg_py.PyErr_Clear();
        tg__warn("could not guard %s.%s; it runs unguarded", g->cls_name, name);
        rc = -1;
        goto done;
    }
    g->orig = value;
    g->orig_is_function = strcmp(tname, "function") == 0;
    g->orig_code = tg_py.PyObject_GetAttrString(value, "__code__");
    tg_py.PyErr_Clear();
    tg_py.Py_IncRef(value);
    g->cls = cls;
    tg_py.Py_IncRef(cls);
    g->clears_args = derives_from(cls, "triton.runtime.autotuner", "Autotuner");
    g->marker = marker;
    g->tuning_entry = !marker && g->clears_args && strcmp(name, "warmup") == 0;
    g->marked = g->clears_args || derives_from(cls, "torch._inductor.runtime.triton_heuristics", "CachingAutotuner");
    g->pyname = key;
    tg_py.Py_IncRef(key);
    g->wrapper = wrapper; /* our reference keeps it alive and identifiable */
    nguards++;
    tg__gstats.guards = nguards;
    if (tg_py.PyObject_SetAttrString(cls, name, wrapper) < 0) {
        tg_py.PyErr_Clear();
        tg__warn("could not set %s.%s; it runs unguarded", g->cls_name, name);
        nguards--;
        tg__gstats.guards = nguards;
        /* the slot is free again: what it held goes with it */
        tg_py.Py_DecRef(wrapper);
        tg_py.Py_DecRef(value);
        tg_py.Py_DecRef(cls);
        tg_py.Py_DecRef(key);
        if (g->orig_code)
            tg_py.Py_DecRef(g->orig_code);
        memset(g, 0, sizeof *g);
        rc = -1;
        goto done;
    }
    tg__info(2, "%s %s (%s)", marker ? "marking" : "guarding", g->method, why);
    if (nguards == 1) { /* a process with something to guard: worth a crash report */
        tg_fatal_set_context(tg_mode_name(tg_opts.mode), tg_emit_seq_counter());
        tg_fatal_install(1);
    }
    rc = 1;
done:
    if (value)
        tg_py.Py_DecRef(value);
    if (key)
        tg_py.Py_DecRef(key);
    if (dict)
        tg_py.Py_DecRef(dict);
    tg_py.PyErr_Clear();
    return rc;
}

int tg_guard_install(PyObject *cls, const char *name, const char *why)
{
    return install(cls, name, why, 0);
}

/* The tuning methods of the built-in tuners: a thread inside one is tuning.
 * Names a class lacks are skipped (another version, another tuner). */
static const char *const tuning_methods[] = {
    "_bench", "prune_configs", "check_disk_cache",                        /* triton Autotuner */
    "benchmark_all_configs", "autotune_to_one_config", "precompile",       /* inductor CachingAutotuner */
    "coordinate_descent_tuning", "bench",
};

/* Classes whose tuning methods are guarded as markers (borrowed: the
 * target table keeps them alive). */
static PyObject *marker_bases[16];
static int nmarker_bases;

int tg__guard_has_markers(struct tg_guard *g)
{
    if (g->has_markers == 0) {
        g->has_markers = -1;
        for (int i = 0; i < nmarker_bases && g->has_markers < 0; i++) {
            int r = tg_py.PyObject_IsSubclass(g->cls, marker_bases[i]);
            if (r < 0)
                tg_py_drop_error();
            if (r > 0)
                g->has_markers = 1;
        }
    }
    return g->has_markers > 0;
}

void tg_guard_install_markers(PyObject *cls)
{
    static PyObject *seen[16]; /* classes already marked (run and warmup share one) */
    static int nseen;
    for (int i = 0; i < nseen; i++)
        if (seen[i] == cls)
            return;
    if (nseen < (int)(sizeof seen / sizeof seen[0]))
        seen[nseen++] = cls; /* borrowed: the target table keeps the class alive */
    int marked = 0;
    for (size_t i = 0; i < sizeof tuning_methods / sizeof tuning_methods[0]; i++)
        marked += install(cls, tuning_methods[i], "tuning method", 1) > 0;
    if (marked > 0 && nmarker_bases < (int)(sizeof marker_bases / sizeof marker_bases[0]))
        marker_bases[nmarker_bases++] = cls;
    if (marked == 0) {
        /* Another Autotuner than the ones tunerguard knows (a Triton version
         * whose tuning methods have other names): it is guarded and
         * serialized all the same; only severity loses its Python evidence. */
        char qual[96], mod[96];
        tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
        tg_py_attr_str(cls, "__module__", mod, sizeof mod);
        tg__info(1, "%s.%s has none of the tuning methods tunerguard knows (_bench, prune_configs, "
                    "check_disk_cache, benchmark_all_configs, ...): an unknown version; it is guarded and "
                    "serialized as usual, and a race's severity comes from the CUDA calls alone",
                 mod, qual);
    }
}
