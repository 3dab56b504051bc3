/* A stand-in for a free-threaded CPython (3.13t/3.14t: none can be had on
 * this machine), enough for what tunerguard does in an interpreter it does
 * not serve: the audit-hook registration its constructor makes, the version
 * string, and an "import" event's module name.
 *
 *   fake_ft_python MODULE...   raises an "import" audit event per MODULE
 *
 * Py_GetVersion says $TG_FAKE_PY_VERSION, else a 3.14t build's string.  The
 * API is exported from the executable (ENABLE_EXPORTS), where a statically
 * linked CPython has it.  Objects are fakes: an event's args "tuple" is the
 * module name itself, which PyTuple_GetItem returns and PyUnicode_AsUTF8
 * reads. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

typedef int (*audit_hook_fn)(const char *event, void *args, void *data);

static audit_hook_fn hooks[8];
static void *hook_data[8];
static int nhooks;

int PySys_AddAuditHook(audit_hook_fn hook, void *data);
const char *Py_GetVersion(void);
void *PyTuple_GetItem(void *tuple, ssize_t i);
const char *PyUnicode_AsUTF8(void *s);
void PyErr_Clear(void);

int PySys_AddAuditHook(audit_hook_fn hook, void *data)
{
    if (nhooks == 8)
        return -1;
    hooks[nhooks] = hook;
    hook_data[nhooks++] = data;
    return 0;
}

const char *Py_GetVersion(void)
{
    const char *v = getenv("TG_FAKE_PY_VERSION");
    return v ? v : "3.14.0 free-threading build (main, Oct 7 2025, 10:00:00) [GCC 14.2.0]";
}

void *PyTuple_GetItem(void *tuple, ssize_t i)
{
    return i == 0 ? tuple : NULL;
}

const char *PyUnicode_AsUTF8(void *s)
{
    return s;
}

void PyErr_Clear(void)
{
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        for (int h = 0; h < nhooks; h++)
            hooks[h]("import", argv[i], hook_data[h]);
    printf("%d audit hook(s), %d import event(s)\n", nhooks, argc - 1);
    return 0;
}
