/* Which exceptions of a raced call the race can have caused: the ones the
 * exception report and its note (guard/report_capture.c) blame on it.  The
 * race clears or overwrites the tuner's shared state (Triton's Autotuner:
 * `self.nargs = None` at the end of the other thread's run), and what that
 * raises is a TypeError, AttributeError or KeyError inside the tuner's own
 * code.  A KeyboardInterrupt, SystemExit or MemoryError is never the race's,
 * nor an exception raised in the program's own frames (a callback, a kernel
 * body, a hook the program passed in).  GIL held; calls Python (attribute
 * reads), drops any error it raises. */
#include "guard/guard_internal.h"
#include "core/py_api.h"
#include "core/py_attr.h"

#include <string.h>

/* Where the tuner's own code lives: the folder of the top-level package of
 * the guarded method's module ("/.../site-packages/<package>/" for
 * <package>.<module>), or the method's file for a module outside a
 * package.  "" when the method has no code object, or is the script's own
 * (__main__: the program's frames, whatever class they are in). */
static void tuner_root(const struct tg_guard *g, char *dst, size_t len)
{
    dst[0] = '\0';
    if (!g || !g->orig_code)
        return;
    const char *mod = g->fn_module;
    tg_py_attr_str(g->orig_code, "co_filename", dst, len);
    if (strcmp(mod, "__main__") == 0) {
        dst[0] = '\0';
        return;
    }
    int dots = 0;
    for (const char *c = mod; *c; c++)
        dots += *c == '.';
    /* a.b.c in .../a/b/c.py: keep up to the dots-th '/' from the end */
    for (char *c = dst + strlen(dst); dots > 0 && c > dst; c--)
        if (c[-1] == '/' && --dots == 0)
            *c = '\0';
    if (dots > 0) /* fewer folders than the module name says: its file only */
        tg_py_attr_str(g->orig_code, "co_filename", dst, len);
}

/* Is FILE in the package of guard g's method (tuner_root)? */
static int in_package(const struct tg_guard *g, const char *file)
{
    char root[400];
    tuner_root(g, root, sizeof root);
    size_t n = strlen(root);
    return n && (root[n - 1] == '/' ? strncmp(file, root, n) == 0 : strcmp(file, root) == 0);
}

/* The file of the innermost frame of traceback tb, "" if none. */
static void innermost_file(PyObject *tb, char *dst, size_t len)
{
    dst[0] = '\0';
    PyObject *cur = tb;
    if (cur)
        tg_py.Py_IncRef(cur);
    while (cur && cur != tg_py.none) {
        PyObject *next = tg_py.PyObject_GetAttrString(cur, "tb_next");
        if (!next || next == tg_py.none) {
            PyObject *frame = tg_py.PyObject_GetAttrString(cur, "tb_frame");
            PyObject *code = frame ? tg_py.PyFrame_GetCode((PyFrameObject *)frame) : NULL;
            tg_py_attr_str(code, "co_filename", dst, len);
            if (code)
                tg_py.Py_DecRef(code);
            if (frame)
                tg_py.Py_DecRef(frame);
        }
        tg_py.Py_DecRef(cur);
        cur = next;
    }
    if (cur)
        tg_py.Py_DecRef(cur);
    tg_py_drop_error();
}

int tg__exception_from_race(const struct tg_guard *g, PyObject *type, PyObject *tb,
                            const struct tg_guard *(*guard_at)(int i))
{
    char name[64], mod[32], file[400];
    tg_py_attr_str(type, "__name__", name, sizeof name);
    tg_py_attr_str(type, "__module__", mod, sizeof mod);
    if (strcmp(mod, "builtins") != 0 ||
        (strcmp(name, "TypeError") != 0 && strcmp(name, "AttributeError") != 0 && strcmp(name, "KeyError") != 0))
        return 0;
    innermost_file(tb, file, sizeof file);
    if (!file[0])
        return 0;
    /* g's package first, then every guarded method's (a subclass's run in
     * the program calls Triton's _bench, where the cleared state is read) */
    if (in_package(g, file))
        return 1;
    const struct tg_guard *h;
    for (int i = 0; guard_at && (h = guard_at(i)) != NULL; i++)
        if (h != g && in_package(h, file))
            return 1;
    return 0;
}
