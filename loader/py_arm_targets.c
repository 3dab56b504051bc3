/* Arming's targets, the loader's part (loader/py_arm.c): the built-in
 * tuner families' entry points (core/builtin_tuners.inc) and targets=, as
 * names (module, class, method), and the questions arming asks of them (is
 * this a target module, or a package above one; is a target's package in
 * sys.modules).  The classes found for them are the core's
 * (guard/py_arm_guard.c).
 *
 * Runs in every Python process, target or not (TG_STARTUP, core/startup.h):
 * no snprintf, nothing allocated.  GIL held in every call; none leaves an
 * exception set. */
#include "loader/py_arm_internal.h"
#include "loader/py_arm_loader.h"
#include "core/startup.h"
#include "core/builtin_tuners.h"
#include "core/log.h"
#include "core/options.h"
#include "core/py_api.h"

#include <string.h>

/* Built-in targets: the entry points of the built-in tuner families
 * (core/builtin_tuners.inc); targets= adds to them.  Text only (no
 * pointers): the families' names by number, each entry its family's. */
static const struct {
    char module[TG_TUNER_MODULE_SIZE];
    char cls[TG_TUNER_CLASS_SIZE];
} builtin_families[TG_TUNER_NFAMILIES] TG_STARTUP_RODATA = {
#define TG_TUNER(id, module, cls, clears_args) [TG_TUNER_##id] = {module, cls},
#include "core/builtin_tuners.inc"
};
static const struct {
    unsigned char family;
    char method[TG_TUNER_ENTRY_SIZE];
} builtin_targets[TG_TUNER_NENTRIES] TG_STARTUP_RODATA = {
#define TG_TUNER_ENTRY(id, method, tuning) {TG_TUNER_##id, method},
#include "core/builtin_tuners.inc"
};

struct tg__arm_target tg__arm_targets[TG_MAX_TARGETS];
int tg__arm_ntargets;

/* snprintf(dst, size, "%s", src) without snprintf (a libc function, and its
 * format a .rodata literal, in a process that imports no target). */
TG_STARTUP static void copy_cut(char *dst, size_t size, const char *src)
{
    size_t n = 0;
    while (src[n] && n + 1 < size) {
        dst[n] = src[n];
        n++;
    }
    dst[n] = '\0';
}

/* One target, by its names (each within the table's sizes), published
 * filled.  tg__arm_lock held. */
TG_STARTUP static struct tg__arm_target *add_names(const char *module, const char *cls, const char *method, int user)
{
    const int n = tg__arm_ntargets;
    if (n == TG_MAX_TARGETS)
        return NULL; /* unreachable: the table holds the built-in ones and as many as the parser accepts */
    struct tg__arm_target *t = &tg__arm_targets[n];
    copy_cut(t->module, sizeof t->module, module);
    copy_cut(t->cls, sizeof t->cls, cls);
    copy_cut(t->method, sizeof t->method, method);
    t->user = user;
    __atomic_store_n(&tg__arm_ntargets, n + 1, __ATOMIC_RELEASE);
    return t;
}

/* spec: one entry the option parser accepted (core/options.c: at most
 * TG_TARGETS_MAX of them, each name within the table's sizes), so none is
 * dropped or cut here. */
TG_STARTUP static void add_target(const struct tg_target_span *spec, int user, int say)
{
    char buf[TG_TARGET_MODULE_MAX + TG_TARGET_CLASS_MAX + TG_TARGET_METHOD_MAX + 3];
    if (!spec->colon || !spec->dot || spec->len >= sizeof buf)
        return; /* unreachable: refused at parsing */
    memcpy(buf, spec->text, spec->len);
    buf[spec->len] = '\0';
    char *colon = buf + (spec->colon - spec->text), *dot = buf + (spec->dot - spec->text);
    *colon = '\0';
    *dot = '\0';
    struct tg__arm_target *t = add_names(buf, colon + 1, dot + 1, user);
    if (!t)
        return;
    if (say && user && strcmp(t->module, "__main__") == 0) {
        /* arming runs before the script does, and the script is never
         * imported after: its classes are not seen */
        tg__warn("targets=%s:%s.%s: classes of the script itself (__main__) cannot be guarded; define %s in "
                 "a module and name that module", t->module, t->cls, t->method, t->cls);
        t->said = 1;
    }
}

/* `python -m MODULE` (the "cpython.run_module" event, its name the one
 * argument): a targets= module run so is the program's __main__, never
 * imported under its own name, so its classes are never guarded: one line
 * for each such target, as for targets=__main__:... */
TG_STARTUP void tg__arm_say_run_as_main(PyObject *args)
{
    const char *name = tg_py.PyUnicode_AsUTF8(tg_py.PyTuple_GetItem(args, 0));
    for (int i = 0; name && i < tg__arm_ntargets; i++) {
        struct tg__arm_target *t = &tg__arm_targets[i];
        if (t->user && !t->said && strcmp(t->module, name) == 0) {
            tg__warn("targets=%s:%s.%s: %s runs as the program itself (python -m %s), as __main__: its classes "
                     "cannot be guarded; run a script that imports %s instead", t->module, t->cls, t->method,
                     t->module, t->module, t->module);
            t->said = 1;
        }
    }
    tg_py.PyErr_Clear();
}

/* say: warn about targets that can never be guarded (not where tunerguard
 * does not serve the interpreter: one line says that). */
TG_STARTUP void tg__arm_parse_targets(int say)
{
    if (__atomic_load_n(&tg__arm_ntargets, __ATOMIC_ACQUIRE))
        return;
    tg_py_lock(&tg__arm_lock);
    if (tg__arm_ntargets) { /* another thread's, meanwhile */
        tg_py_unlock(&tg__arm_lock);
        return;
    }
    for (size_t i = 0; i < sizeof builtin_targets / sizeof builtin_targets[0]; i++)
        add_names(builtin_families[builtin_targets[i].family].module,
                  builtin_families[builtin_targets[i].family].cls, builtin_targets[i].method, 0);
    struct tg_target_span spec;
    for (const char *p = tg_opts.targets; tg_target_next(&p, &spec);)
        add_target(&spec, 1, say);
    tg_py_unlock(&tg__arm_lock);
}

/* Without the lock: the published entries. */
TG_STARTUP int tg__arm_is_target_module(const char *name)
{
    for (int i = 0, n = __atomic_load_n(&tg__arm_ntargets, __ATOMIC_ACQUIRE); i < n; i++)
        if (strcmp(tg__arm_targets[i].module, name) == 0)
            return 1;
    return 0;
}

/* Is name a target module, or a package above one? */
TG_STARTUP int tg__arm_names_target_or_package(const char *name)
{
    size_t n = strlen(name);
    for (int i = 0, nt = __atomic_load_n(&tg__arm_ntargets, __ATOMIC_ACQUIRE); i < nt; i++) {
        const char *m = tg__arm_targets[i].module;
        if (strncmp(m, name, n) == 0 && (m[n] == '\0' || m[n] == '.'))
            return 1;
    }
    return 0;
}

/* Is the top-level package of some target in sys.modules (being imported
 * or imported)? */
TG_STARTUP int tg__arm_target_package_present(void)
{
    /* Finalizing: sys.modules may be gone (PyImport_GetModuleDict is fatal
     * then), and nothing imported now needs guarding. */
    int (*fin)(void) = tg_py.Py_IsFinalizing ? tg_py.Py_IsFinalizing : tg_py._Py_IsFinalizing;
    if (fin && fin())
        return 0;
    PyObject *mods = tg_py.PyImport_GetModuleDict();
    const int ntargets = __atomic_load_n(&tg__arm_ntargets, __ATOMIC_ACQUIRE);
    for (int i = 0; mods && i < ntargets; i++) {
        char top[TG_TARGET_MODULE_MAX + 1];
        copy_cut(top, sizeof top, tg__arm_targets[i].module);
        char *dot = strchr(top, '.');
        if (dot)
            *dot = '\0';
        if (tg_py.PyDict_GetItemString(mods, top)) /* borrowed */
            return 1;
    }
    tg_py.PyErr_Clear();
    return 0;
}

TG_STARTUP int tg__arm_user_target(void)
{
    for (int i = 0; i < tg__arm_ntargets; i++)
        if (tg__arm_targets[i].user)
            return 1;
    return 0;
}
