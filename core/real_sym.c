/* The real dlsym; see core/real_sym.h. */
#include "core/real_sym.h"
#include "core/startup.h"
#include "core/log.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Read at arming in every Python process: in RELRO, not .rodata
 * (TG_STARTUP_RODATA, core/startup.h). */
static const struct {
    char dlsym[sizeof "dlsym"];
    char versions[3][sizeof "GLIBC_2.2.5"];
} text TG_STARTUP_RODATA = {"dlsym", {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"}};

TG_STARTUP tg__dlsym_fn tg__real_dlsym(void)
{
    static _Atomic(tg__dlsym_fn) real TG_STARTUP_DATA;
    tg__dlsym_fn f = atomic_load_explicit(&real, memory_order_relaxed);
    if (__builtin_expect(f != NULL, 1))
        return f;
    /* dlvsym is not interposed by tunerguard, so this cannot recurse */
    for (size_t i = 0; !f && i < sizeof text.versions / sizeof text.versions[0]; i++)
        f = (tg__dlsym_fn)dlvsym(RTLD_NEXT, text.dlsym, text.versions[i]);
    if (!f) {
        tg__warn("cannot find the real dlsym (dlvsym GLIBC_2.34/2.2.5/2.17); aborting");
        abort();
    }
    atomic_store_explicit(&real, f, memory_order_relaxed);
    return f;
}

TG_STARTUP int tg_same_object(const void *p, const void *anchor)
{
    Dl_info at, mine;
    return p && dladdr(p, &at) && dladdr(anchor, &mine) && at.dli_fbase == mine.dli_fbase;
}

void *tg_real_sym(void *handle, const char *name)
{
    return tg__real_dlsym()(handle, name);
}
