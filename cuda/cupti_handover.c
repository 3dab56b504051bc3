/* Another CUPTI client arrives (torch.profiler's Kineto, Nsight, ...):
 * the interposed cuptiSubscribe, cuptiSubscribe_v2 and
 * cuptiActivityRegisterCallbacks (reached through the loader's forwarders,
 * guard/core_entry.c).  tunerguard lets go of CUPTI first
 * (cuda/cupti_backend.c), says so in one line, and forwards the call to
 * the program's own libcupti.  Any thread; not a hot path (a profiler
 * starting): dladdr, dlopen and dl_iterate_phdr take the dynamic loader's
 * lock.  Not signal-safe; allocates nothing of its own. */
#include "cuda/cupti_internal.h"
#include "core/log.h"
#include "core/real_sym.h"
#include "loader/core_api.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

/* ---- another CUPTI client arrives (torch.profiler's Kineto, ...) -----------------
 * CUPTI takes one subscriber per process.  These exports interpose the
 * program's calls (PLT-bound, as libtorch_cuda's; or dlsym(RTLD_DEFAULT)):
 * when tunerguard holds CUPTI it lets go first, says so in one line, and
 * the caller's call then succeeds.  Our own calls use the handle's pointers. */

static void handover(const char *what)
{
    if (!tg__cupti_let_go())
        return;
    tg__warn("cupti=1: the program called %s (torch.profiler, Nsight or another CUPTI client): tunerguard "
             "released CUPTI to it; interference verdicts fall back to launch counts from here on",
             what);
}

/* The program's own libcupti, wherever it was loaded.  A library that calls
 * cuptiSubscribe has libcupti among its dependencies, usually in a local
 * scope (Python loads extension modules RTLD_LOCAL, and torch's libkineto
 * pulls libcupti in with them) where dlsym(RTLD_NEXT) does not look.  Two
 * copies may be loaded (a wheel's and the toolkit's; ours from cupti_path):
 * the subscription must land in the caller's.  So, in order:
 *  1. the caller's own scope: the object holding the return address, opened
 *     with RTLD_NOLOAD, and a lookup on that handle, which searches the
 *     object and its dependencies (its libcupti), never the preloaded
 *     tunerguard; an answer that is our own export anyway (a caller in the
 *     main program, whose handle searches the global scope) is not taken;
 *  2. the copy tunerguard itself opened (cupti=1);
 *  3. the first libcupti.so* loaded (dl_iterate_phdr);
 *  4. RTLD_NEXT.
 * Not a hot path (a profiler starting); dl_iterate_phdr and dlopen take the
 * loader's lock, fine here. */
static int find_cupti_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && strncmp(base, "libcupti.so", 11) == 0) {
        *(const char **)data = info->dlpi_name;
        return 1;
    }
    return 0;
}

/* p is one of tunerguard's exported definitions: the loader's forwarders
 * (libtunerguard.so, where tg__real_dlsym lives), not this core. */
static int is_own(void *p)
{
    return tg_same_object(p, (const void *)tg__real_dlsym);
}

static void *caller_sym(const void *ret, const char *name)
{
    Dl_info info;
    /* ret - 1: inside the call instruction, so inside the caller's object */
    if (!ret || !dladdr((const char *)ret - 1, &info) || !info.dli_fname || !info.dli_fname[0])
        return NULL;
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *p = tg__real_dlsym()(h, name);
    dlclose(h); /* NOLOAD took a reference; the object stays loaded */
    return is_own(p) ? NULL : p;
}

static void *next_sym(const void *ret, const char *name)
{
    void *p = caller_sym(ret, name);
    if (p)
        return p;
    p = tg__cupti_own_sym(name);
    if (p)
        return p;
    const char *path = NULL;
    dl_iterate_phdr(find_cupti_cb, &path);
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (h) {
        p = tg__real_dlsym()(h, name);
        dlclose(h); /* NOLOAD took a reference; the object stays loaded */
        if (p)
            return p;
    }
    return tg__real_dlsym()(RTLD_NEXT, name);
}

CUptiResult CUPTIAPI tg__cupti_fwd_cuptiSubscribe(CUpti_SubscriberHandle *s,
                                                                           CUpti_CallbackFunc cb, void *ud)
{
    handover("cuptiSubscribe");
    CUptiResult (*f)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *) =
        next_sym(__builtin_return_address(0), "cuptiSubscribe");
    return f ? f(s, cb, ud) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI tg__cupti_fwd_cuptiSubscribe_v2(CUpti_SubscriberHandle *s,
                                                                              CUpti_CallbackFunc cb, void *ud,
                                                                              CUpti_SubscriberParams *p)
{
    handover("cuptiSubscribe_v2");
    CUptiResult (*f)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *) =
        next_sym(__builtin_return_address(0), "cuptiSubscribe_v2");
    return f ? f(s, cb, ud, p) : CUPTI_ERROR_NOT_INITIALIZED;
}

CUptiResult CUPTIAPI
tg__cupti_fwd_cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done)
{
    handover("cuptiActivityRegisterCallbacks");
    CUptiResult (*f)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) =
        next_sym(__builtin_return_address(0), "cuptiActivityRegisterCallbacks");
    return f ? f(req, done) : CUPTI_ERROR_NOT_INITIALIZED;
}

