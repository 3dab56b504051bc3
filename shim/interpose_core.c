/* The preload's binding to the core (shim/core_api.h): dlopen of
 * libtunerguard_core.so from the loader's own directory.  Preload library
 * only (the static archive binds with shim/core_static.c).
 *
 * The directory is the loader's file as the dynamic loader knows it
 * (dladdr on a loader function: the LD_PRELOAD entry, or the path a library
 * search found).  A relative LD_PRELOAD entry is resolved by the
 * constructor (tg__core_note_dir), against the directory the process
 * started in, as the dynamic loader resolved it.
 *
 * dlopen flags: RTLD_NOW, so every binding of the core is made here, once,
 * under the load's lock, and no lazy PLT resolution runs the dynamic linker
 * later from inside a hook (a driver callback, a signal handler, a fork
 * child); RTLD_LOCAL, so nothing in the process binds to the core's names
 * (it exports tg_core_entry alone); RTLD_NODELETE, because the forwarders
 * jump into it for the rest of the process. */
#include "shim/core_api.h"
#include "tg_build_id.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TG_CORE_FILE "libtunerguard_core.so"

/* The loader's own file made absolute at start-up, where it was preloaded
 * by a relative path (tg__core_note_dir); NULL otherwise.  Allocated (by
 * realpath) only then: a 4 KiB buffer in .bss would move the variables
 * every process writes at start-up onto a page of their own. */
static char *self_at_start;

void tg__core_note_dir(void)
{
    Dl_info me;
    if (dladdr((void *)tg__core_bind, &me) && me.dli_fname && me.dli_fname[0] != '/')
        self_at_start = realpath(me.dli_fname, NULL);
}

/* dir/TG_CORE_FILE into out; 0, or -1 (err says why). */
static int core_path(char *out, size_t len, char *err, size_t errlen)
{
    Dl_info me;
    if (!dladdr((void *)tg__core_bind, &me) || !me.dli_fname || !me.dli_fname[0]) {
        snprintf(err, errlen, "cannot find the core library: the loader's own path is unknown");
        return -1;
    }
    const char *self = me.dli_fname;
    if (self[0] != '/') {
        /* Resolved by the constructor, before the program could change
         * directory; never against the directory it is in now, where a
         * file of that name is not ours to run. */
        if (!self_at_start) {
            snprintf(err, errlen, "cannot find the core library: the loader's own path %s is relative and "
                     "was not made absolute at start-up", self);
            return -1;
        }
        self = self_at_start;
    }
    const char *slash = strrchr(self, '/');
    int dirlen = slash ? (int)(slash - self) : 1;
    const char *dir = slash ? self : ".";
    if (snprintf(out, len, "%.*s/%s", dirlen, dir, TG_CORE_FILE) >= (int)len) {
        snprintf(err, errlen, "cannot load the core library: the path beside %s is too long", self);
        return -1;
    }
    return 0;
}

const struct tg_core_api *tg__core_bind(char *err, size_t errlen)
{
    char path[PATH_MAX + sizeof TG_CORE_FILE];
    if (core_path(path, sizeof path, err, errlen) < 0)
        return NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *why = dlerror(); /* consumed: no error left pending */
        snprintf(err, errlen, "cannot load the core library (%s)", why ? why : path);
        return NULL;
    }
    const struct tg_core_api *(*entry)(const char *) =
        (const struct tg_core_api *(*)(const char *))tg__real_dlsym()(h, "tg_core_entry");
    const struct tg_core_api *t = entry ? entry(TG_BUILD_ID) : NULL;
    if (!entry)
        (void)dlerror();
    if (!t) {
        snprintf(err, errlen, "cannot use the core library %s: %s", path,
                 entry ? "it is from another build than the preloaded libtunerguard.so" : "no tg_core_entry in it");
        return NULL;
    }
    return t;
}

void tg__core_ready(const struct tg_core_api *t)
{
    /* Loaded is activated: whatever needed the core may report (the report
     * path, symbolize=, trace=, the halt), before any thread can see the
     * table. */
    t->activate();
}
