/* Symbol look-ups that never land on tunerguard's own exports.
 *
 * The preload library exports an interposing dlsym (loader/interpose_dlsym.c)
 * and cu* / cupti* definitions; a plain dlsym() call from inside the library
 * binds to that export.  Every internal look-up goes through here instead: the
 * next dlsym after tunerguard, found with dlvsym (which tunerguard does not
 * interpose). */
#ifndef TG_REAL_SYM_H
#define TG_REAL_SYM_H

typedef void *(*tg__dlsym_fn)(void *, const char *);

/* The next dlsym after tunerguard: dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"),
 * else "GLIBC_2.2.5", else "GLIBC_2.17"; resolved once, never NULL after
 * (aborts with one line if glibc offers none: nothing could work).
 * Lock-free; allocates nothing of ours. */
tg__dlsym_fn tg__real_dlsym(void);

/* tg__real_dlsym()(handle, name): RTLD_DEFAULT, RTLD_NEXT or a dlopen handle.
 * Like any failed dlsym, a missing name leaves a dlerror() message. */
void *tg_real_sym(void *handle, const char *name);

/* tunerguard's one "is this address ours" test: is p inside the loaded
 * object (the executable or a shared library) that holds anchor, one of
 * tunerguard's own functions (the loader's: libtunerguard.so; the core
 * library's: libtunerguard_core.so; in the unit tests both are the test
 * binary)?  Compared by dladdr's load base; 0 for NULL or an address in no
 * object.  dladdr takes the dynamic loader's lock: not signal-safe;
 * allocates nothing. */
int tg_same_object(const void *p, const void *anchor);

#endif
