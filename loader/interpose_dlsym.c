/* The exported dlsym: how tunerguard sees driver entry points that callers
 * fetch with dlsym on a libcuda handle (Triton's launcher, cuBLAS*, cudart's
 * bootstrap of cuGetProcAddress_v2).  Preload library only.
 *
 * Contract:
 *  - Every lookup tunerguard has no business with (RTLD_NEXT, names that are
 *    not "cu" + uppercase nor "cupti", cuGetExportTable, any answer but the
 *    own-definition one when tunerguard is off) ends in a TAIL
 *    CALL to the real dlsym: glibc resolves RTLD_NEXT (and RTLD_DEFAULT's
 *    scope) from the return address, so a normal call would make other
 *    interposers' dlsym(RTLD_NEXT, ...) resolve relative to tunerguard and
 *    recurse (notes/cuda-interception.md §2.3).  A ctest checks the jmp.
 *  - A driver name is resolved by the real dlsym first; a pointer into libcuda
 *    is replaced by the wrapper of exactly that variant (tg__cuda_wrap, in
 *    the core library: the first such look-up loads it, loader/core_api.h;
 *    when it cannot be loaded, the real answer passes through).
 *  - A lookup that finds tunerguard's own exported definition (RTLD_DEFAULT,
 *    the main program's handle) gives NULL while no libcuda.so.1 is loaded
 *    (for "cupti*" names: while no libcupti is loaded), in every mode,
 *    mode=off included, so "is CUDA here?" probes are not fooled; dlerror()
 *    then says the name is undefined, as for any failed lookup.  mode=off
 *    only skips the wrapping: every other answer is the real dlsym's.
 *  - Where another copy of libtunerguard.so serves the process
 *    (tg__copy_inert), every lookup passes through: that copy's real dlsym
 *    is this one.
 *  - The real dlsym is dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"), else
 *    GLIBC_2.2.5 (tg__real_dlsym).  The unversioned definition here
 *    interposes both the @GLIBC_2.34 and the @GLIBC_2.2.5 references.
 * Allocates nothing itself; takes no lock of its own (dl_iterate_phdr takes
 * the loader's for "cupti*" names, and dlopen(RTLD_NOLOAD) does); thread-safe. */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

#include "loader/core_api.h"
#include "core/real_sym.h"
#include "core/startup.h"
#include "core/options.h"

#if defined(__GNUC__) && !defined(__clang__)
/* the pass-through must be a sibling call even in a -O0 build */
#pragma GCC optimize("optimize-sibling-calls")
#endif

static _Atomic(tg__dlsym_fn) tg__next_dlsym;

/* p is one of the loader's exported definitions (a cu* / cupti* forwarder). */
static int tg__is_own(void *p)
{
    return tg_same_object(p, (const void *)tg__is_own);
}

/* The answer for a name whose only definition found is our own export while
 * the library behind it is not loaded: NULL, and the dlerror() state of a
 * failed lookup.  A lookup in libc (loaded, never unloaded; one reference
 * kept) fails for any cu* / cupti* name and leaves glibc's own message,
 * "...libc.so.6: undefined symbol: <name>"; without it the caller's
 * dlerror() would say nothing (the lookup that found our export succeeded),
 * and a caller that tells "absent" from "defined as NULL" by dlerror() would
 * take the name for defined. */
static void *tg__absent(tg__dlsym_fn real, const char *s)
{
    static void *_Atomic libc;
    void *h = atomic_load_explicit(&libc, memory_order_relaxed);
    if (!h) {
        h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        if (h) /* two racing threads: one more reference to libc, harmless */
            atomic_store_explicit(&libc, h, memory_order_relaxed);
    }
    if (h)
        (void)real(h, s);
    return NULL;
}

/* The driver-name path.  Returns 1 and sets *out when tunerguard decides the
 * answer; 0 when the caller should pass the lookup through unchanged. */
static __attribute__((noinline)) int tg__dlsym_cu(tg__dlsym_fn real, void *h, const char *s,
                                                  void **out)
{
    if (strcmp(s, "cuGetExportTable") == 0)
        return 0; /* the driver and NVML look this up during their own init */
    void *p = real(h, s);
    if (!p)
        return 0; /* let the caller's own scope try (RTLD_DEFAULT) */
    if (tg__is_own(p)) {
        /* our exported definition: right only if a driver is behind it,
         * whatever the mode (mode=off must answer as if we were absent) */
        if (!tg__cuda_lib_loaded()) {
            *out = tg__absent(real, s);
            return 1;
        }
        if (tg_opts.mode == TG_MODE_OFF)
            return 0;
        const struct tg_core_api *core = tg_core_load();
        if (core)
            core->cuda_init_loaded();
        *out = p; /* the forwarder: the core's entry, or the driver's without a core */
        return 1;
    }
    if (tg_opts.mode == TG_MODE_OFF)
        return 0; /* off: nothing is wrapped, the real answer as is */
    const struct tg_core_api *core = tg_core_load();
    if (!core)
        return 0; /* no core: the real answer as is */
    *out = core->cuda_wrap(p);
    (void)dlerror(); /* as the caller's successful look-up left it */
    return 1;
}

/* Is a libcupti (any copy, any soname libcupti.so*) loaded? */
static int tg__cupti_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *n = info->dlpi_name;
    const char *base = n ? strrchr(n, '/') : NULL;
    base = base ? base + 1 : n;
    return base && strncmp(base, "libcupti.so", 11) == 0;
}

/* "cupti*" names: tunerguard exports cuptiSubscribe* and
 * cuptiActivityRegisterCallbacks (cuda/cupti_backend.c, the hand-over to
 * another CUPTI client); they stand for a libcupti only while one is loaded.
 * Not a hot path (a profiler starting); dl_iterate_phdr takes the loader's
 * lock, fine here. */
static __attribute__((noinline)) int tg__dlsym_cupti(tg__dlsym_fn real, void *h, const char *s,
                                                     void **out)
{
    void *p = real(h, s);
    if (!p || !tg__is_own(p) || dl_iterate_phdr(tg__cupti_cb, NULL))
        return 0;
    *out = tg__absent(real, s);
    return 1;
}

TG_STARTUP __attribute__((visibility("default"))) void *dlsym(void *h, const char *s)
{
    tg__dlsym_fn real = atomic_load_explicit(&tg__next_dlsym, memory_order_relaxed);
    if (__builtin_expect(!real, 0)) {
        real = tg__real_dlsym();
        atomic_store_explicit(&tg__next_dlsym, real, memory_order_relaxed);
    }
    /* glibc declares s nonnull; a NULL from a buggy caller still must reach
     * the real dlsym unharmed, so hide s from that assumption */
    const char *n = s;
    __asm__("" : "+r"(n));
    /* Only cu* names are ever answered otherwise, so the rest meet nothing
     * else here: a runtime that resolves its own interceptors through dlsym
     * before it can run anything (ThreadSanitizer's, tools/dev tsan) meets
     * no dlopen. */
    if (h == RTLD_NEXT || !n || n[0] != 'c' || n[1] != 'u')
        return real(h, s);
    if (__builtin_expect(tg__copy_inert(NULL), 0))
        return real(h, s); /* another copy serves (the one before us passes its look-ups to us) */
    if (n[2] >= 'A' && n[2] <= 'Z') {
        void *out;
        if (tg__dlsym_cu(real, h, s, &out))
            return out;
    } else if (n[2] == 'p' && n[3] == 't' && n[4] == 'i') {
        /* (compared by hand: a "cupti" literal is in .rodata, a segment no
         * process that imports no target should touch, core/startup.h) */
        void *out;
        if (tg__dlsym_cupti(real, h, s, &out))
            return out;
    }
    return real(h, s); /* tail call: see the contract above */
}
