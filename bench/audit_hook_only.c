/* The floor of any tool that watches Python through audit hooks: a preloaded
 * library whose constructor registers one C audit hook that returns 0 and
 * does nothing else.  Once a hook is registered CPython builds the event's
 * name and argument tuple for every audit event, so this is what such a
 * tool costs a Python process before it does anything (docs/benchmarks.md,
 * "Start-up cost").
 *
 *   cc -O2 -shared -fPIC -o /tmp/hook.so bench/audit_hook_only.c
 *   python3 bench/startup.py --python PY build/libtunerguard.so /tmp/hook.so /tmp/empty.so */
#include <dlfcn.h>

static int hook(const char *event, void *args, void *data)
{
    (void)event;
    (void)args;
    (void)data;
    return 0;
}

__attribute__((constructor)) static void add_hook(void)
{
    int (*add)(int (*)(const char *, void *, void *), void *) =
        (int (*)(int (*)(const char *, void *, void *), void *))dlsym(RTLD_DEFAULT, "PySys_AddAuditHook");
    if (add)
        add(hook, 0);
}
