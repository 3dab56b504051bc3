/* The two libraries and what joins them.
 *
 *   libtunerguard.so       the loader: the LD_PRELOAD target, in every
 *                          process.  The constructor, the audit hook, arming
 *                          and the finder's negative answer, the dlsym
 *                          interposer, the exported cu* / cupti* forwarders,
 *                          the options, the CPython API table, the process
 *                          facts, every thread-local.
 *   libtunerguard_core.so  everything else (guards, session, serialize,
 *                          reports, CUDA wrappers, CUPTI, libunwind), loaded
 *                          the first time it is needed: a target module
 *                          imported, the first CUDA resolution or call,
 *                          tg_activate, suppressions, trace=1.  From the file
 *                          beside the loader, else from the copy inside the
 *                          loader's own file (loader/core_embed.c): the file a
 *                          user preloads is the whole tool.
 *
 * Core -> loader: the core is linked against the loader (DT_NEEDED on the
 * soname libtunerguard.so, always already loaded) and uses the loader's
 * exported tg_* / tg__* names directly (tg_opts, tg_py, tg__self, ...).
 * Loader -> core: one entry point, tg_core_entry, gives the table below.
 *
 * The core has no thread-locals of its own (PT_TLS): it is dlopen'd late,
 * where initial-exec TLS could find glibc's static TLS surplus used up; the
 * loader defines them all (the tls.c of each folder). */
#ifndef TG_CORE_API_H
#define TG_CORE_API_H

#include <stddef.h>

#include <cupti.h>

#include "core/py_api.h"
#include "core/cuda_api.h"

/* The exported cupti* names (cuda/cupti_backend.c), after the cu* rows in
 * the forwarders' table. */
#define TG_CUPTI_FORWARDS(X)                                                    \
    X(cuptiSubscribe, CUptiResult, (CUpti_SubscriberHandle * s, CUpti_CallbackFunc cb, void *ud), \
      (s, cb, ud))                                                              \
    X(cuptiSubscribe_v2, CUptiResult,                                           \
      (CUpti_SubscriberHandle * s, CUpti_CallbackFunc cb, void *ud, CUpti_SubscriberParams *p), \
      (s, cb, ud, p))                                                           \
    X(cuptiActivityRegisterCallbacks, CUptiResult,                              \
      (CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done), (req, done))

/* The forwarders' rows: TG_FWD_<name> for every exported name, the cu*
 * ones equal to their TG_FN_<name>. */
enum tg_fwd_row {
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) TG_FWD_##name = TG_FN_##name,
#define TG_CUDA_GPA(name, params, args) TG_FWD_##name = TG_FN_##name,
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA
#define TG_X(name, ret, params, args) TG_FWD_##name,
    TG_FWD_CUPTI_FIRST_ = TG_CUDA_NFN - 1,
    TG_CUPTI_FORWARDS(TG_X)
#undef TG_X
    TG_FWD_N
};

struct tg_core_api {
    /* What the loader's exported definitions jump to, row by row: the cu*
     * rows of core/cuda_api.inc, then the cupti* names above. */
    void *fwd[TG_FWD_N];
    /* cu* row fn's wrapper itself once the driver's function is resolved
     * (the forwarder then jumps straight to it), else fwd[fn] (which
     * resolves per call, or says CUDA_ERROR_NOT_FOUND). */
    void *(*cuda_direct)(unsigned fn);
    unsigned long long (*cuda_count)(const char *variant);
    void (*activate)(void);                     /* tg_activate's work, once */
    void (*fini)(void);                         /* the destructor's work */
    int (*arm_guard_module)(const char *name, PyObject *mod, int executed);
    PyObject *(*arm_find_target_spec)(PyObject *fullname, PyObject *path, PyObject *target);
    void (*arm_exit_summary)(void);
    void (*arm_finalizing)(void);               /* the interpreter finalizes, objects still alive */
    int (*cupti_maybe_start)(int check_loaded);
    void *(*cuda_wrap)(void *p);
    int (*cuda_init_loaded)(void);
    int (*supp_load)(const char *path, char *err, size_t errlen);
};

/* ---- the loader's services to the core ------------------------------------ */

/* Set up what reports and the trace need: the report path (log_path, copied), symbolize=, trace=,
 * the trace's namers, the halt of halt_on_race/deadlock=abort.  Once per
 * process (a second caller waits for the first), by whoever comes first: arming (py_arm.c) with
 * trace=1, the first target module, the first CUDA resolution (cuda_hooks.c), the constructor where
 * suppressions were loaded.  The loader's (loader/core_link.c): loads the core first (no core: does
 * nothing), then runs tg__core_activate.  Not from a hot path; not signal-safe. */
void tg_activate(void);

/* 1 if a library named libcuda.so.1 is loaded in this process (RTLD_NOLOAD
 * query: loads nothing).  The loader's (loader/core_link.c). */
int tg__cuda_lib_loaded(void);

/* The core's one export.  build_id: the loader's (cmake/build_id.cmake); a
 * core of another build answers NULL (the table's layout may differ). */
const struct tg_core_api *tg_core_entry(const char *build_id);

/* ---- the loader's side (loader/core_link.c) ---------------------------------- */

/* The table, loading the core the first time (once per process: a second
 * thread waits for the first; a call from inside the load on the loading
 * thread, such as our dlsym interposer reached from a constructor, gets NULL
 * without waiting).  NULL when the core cannot be loaded: one line said,
 * once, naming the problem; the caller then passes through.  dlerror() is
 * left as a successful dl call leaves it (no error pending).  After the
 * first call: one acquire load.  Allocates only inside dlopen.  The core is
 * activated (tg_activate's work) before the table is published (the
 * preload's binding does it; the static archive's does not: a unit test
 * activates when it means to). */
const struct tg_core_api *tg_core_load(void);

/* The table if the core is loaded, else NULL; never loads.  One load. */
const struct tg_core_api *tg_core_loaded(void);

/* 1 once tg_core_load has given its final answer NULL (the core could not
 * be loaded: forwarders may then bind to the real driver for good); 0 while
 * not tried, loaded, or being loaded on this thread. */
int tg_core_failed(void);

/* Does an option need the core from arming on (trace=1: the timeline)? */
int tg_core_needed_at_start(void);

/* tg_cupti_maybe_start (cuda/cupti_backend.h) from the loader: loads the
 * core only when cupti=1 and libcuda is there. */
int tg_core_cupti_maybe_start(int check_loaded);

/* The binding, one per build: loader/interpose_core.c (the preload: dlopen
 * of libtunerguard_core.so beside the loader) or tests/unit/core_static.c (the
 * static archive the unit tests link: the table itself).  Writes at most
 * errlen bytes of why into err on failure.  Called without the load's lock
 * (dlopen takes ld.so's own; the two are never held together), possibly by
 * two threads at once: both get the same table. */
const struct tg_core_api *tg__core_bind(char *err, size_t errlen);
/* fork child (the loader's fork guard): close the fds that binds in
 * progress in other threads of the parent held (they are not in the child). */
void tg__core_bind_atfork_child(void);
/* The bound core made ready before any thread sees it, once, under the
 * load's lock: the preload's activates it (a loaded core is an activated
 * one: the report path, symbolize=, trace=, the halt); the static
 * archive's does nothing (the unit tests activate themselves). */
void tg__core_ready(const struct tg_core_api *t);
/* Constructor, where LD_PRELOAD names a relative path (any mode: cupti*
 * rows load the core under mode=off too): remember the loader's file as an
 * absolute path now, before the program can change directory (one
 * realpath; nothing where every entry is absolute). */
void tg__core_note_dir(void);

/* One copy of libtunerguard.so serves a process: the one whose exported
 * names win (the first in the global lookup order, the one
 * dlsym(RTLD_DEFAULT, "tunerguard_cuda_count") finds).  1 when another copy
 * serves: this one stays inert (no audit hook, never loads its core; its
 * dlsym and forwarders pass through).  Decided at the first call (the
 * constructor, or an earlier dlsym through this copy), then one load.
 * Thread-safe; allocates nothing.  *serving, when given and this copy is
 * inert: an address inside the copy that serves.  The static archive's
 * answer is 0. */
int tg__copy_inert(void **serving);

#endif
