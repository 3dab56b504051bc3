/* Resolution of the CPython API table.  See py_api.h. */
#include "core/py_api.h"

#include "core/real_sym.h"

#include <dlfcn.h>
#include <string.h>

struct tg_py_api tg_py;

int tg_py_present(void)
{
    return tg_real_sym(RTLD_DEFAULT, "PySys_AddAuditHook") != NULL;
}

int tg_py_resolve(void)
{
    /* PySys_AddAuditHook is the marker: absent in bash, gcc, ptxas... */
    if (!tg_real_sym(RTLD_DEFAULT, "PySys_AddAuditHook"))
        return -1;
#define TG_PYFN(req, ret, name, params)                                   \
    tg_py.name = (ret(*) params)tg_real_sym(RTLD_DEFAULT, #name);               \
    if (req && !tg_py.name)                                               \
        return -1;
#include "py_api.inc"
#undef TG_PYFN
    tg_py.none = (PyObject *)tg_real_sym(RTLD_DEFAULT, "_Py_NoneStruct");
    if (!tg_py.none)
        return -1;
    /* Py_Version (3.11+) is a data symbol; before that, Py_GetVersion(). */
    const char *(*getv)(void) = (const char *(*)(void))tg_real_sym(RTLD_DEFAULT, "Py_GetVersion");
    const char *v = getv ? getv() : "";
    tg_py.minor = 0;
    if (v[0] == '3' && v[1] == '.') {
        for (const char *p = v + 2; *p >= '0' && *p <= '9'; p++)
            tg_py.minor = tg_py.minor * 10 + (*p - '0');
    }
    if (tg_py.minor < 9)
        return -1;
    /* Free-threaded builds (3.13t) have no GIL to order our table updates. */
    tg_py.free_threaded = strstr(v, "free-threading") != NULL;
    return 0;
}
