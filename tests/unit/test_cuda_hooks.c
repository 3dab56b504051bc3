/* CUDA hooks against the stand-in driver, without any preload: the static
 * core's tg__cuda_wrap / gpa wrappers / recording, driven directly.  The fake
 * is dlopen'ed by path (FAKECUDA_LIB, set by tests/fakecuda/CMakeLists.txt).
 * Criterion runs each test in its own process, so each starts uninitialised. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reports/native_stack.h"
#include "cuda/cuda_hooks.h"
#include "core/options.h"
#include "core/thread_state.h"

#ifndef FAKECUDA_LIB
#error "FAKECUDA_LIB must name the fake libcuda.so.1 (tests/fakecuda/CMakeLists.txt)"
#endif

static void *lib;
static unsigned long long (*fk_count)(const char *);
static int (*fk_gate_arm)(void);
static int (*fk_gate_wait_parked)(double);
static void (*fk_gate_open)(void);
static void *(*fk_ctx)(int);
static void (*fk_set_version)(int);

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);

static void *real(const char *name)
{
    void *p = dlsym(lib, name);
    cr_assert(p, "the fake lacks %s", name);
    return p;
}

/* dlsym + tg__cuda_wrap: what the preloaded dlsym hook does */
static void *wrapped(const char *name)
{
    return tg__cuda_wrap(real(name));
}

static void setup(void)
{
    tg_opts.mode = TG_MODE_DETECT;
    lib = dlopen(FAKECUDA_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert(lib, "dlopen %s: %s", FAKECUDA_LIB, dlerror());
    fk_count = (unsigned long long (*)(const char *))real("fakecuda_count");
    fk_gate_arm = (int (*)(void))real("fakecuda_gate_arm");
    fk_gate_wait_parked = (int (*)(double))real("fakecuda_gate_wait_parked");
    fk_gate_open = (void (*)(void))real("fakecuda_gate_open");
    fk_ctx = (void *(*)(int))real("fakecuda_ctx");
    fk_set_version = (void (*)(int))real("fakecuda_set_driver_version");
}

TestSuite(cuda_hooks, .init = setup);

Test(cuda_hooks, table_names_are_unique_and_exported_by_the_fake)
{
    for (unsigned i = 0; i < TG_CUDA_NFN; i++) {
        const char *n = tg_cuda_fn_name(i);
        cr_assert_eq(tg_cuda_fn_index(n), (int)i, "%s", n);
        cr_assert(dlsym(lib, n), "fake lacks %s: add it to tests/fakecuda/fakecuda.c", n);
    }
    cr_assert_str_eq(tg_cuda_fn_name(TG_CUDA_NFN), "?");
    cr_assert_eq(tg_cuda_fn_kind(TG_FN_cuLaunchKernelEx_ptsz), TG_CUDA_LAUNCH);
    cr_assert_eq(tg_cuda_fn_kind(TG_FN_cuCtxSynchronize_v2), TG_CUDA_SYNC);
    cr_assert_eq(tg_cuda_fn_kind(TG_FN_cuMemcpyDtoHAsync_v2), TG_CUDA_SYNC);
    cr_assert_eq(tg_cuda_fn_kind(TG_FN_cuModuleGetFunction), TG_CUDA_MODULE);
}

Test(cuda_hooks, nothing_before_a_libcuda_pointer_then_every_row_identified_by_address)
{
    cr_assert_eq(tg_cuda_active(), 0);
    /* a pointer outside libcuda never arms anything */
    cr_assert_eq(tg__cuda_wrap((void *)strlen), (void *)strlen);
    cr_assert_eq(tg_cuda_active(), 0);
    for (unsigned i = 0; i < TG_CUDA_NFN; i++) {
        void *p = real(tg_cuda_fn_name(i));
        void *w = tg__cuda_wrap(p);
        cr_assert_eq(w, tg__cuda_wrapper(i), "%s", tg_cuda_fn_name(i));
        cr_assert_neq(w, p);
        cr_assert_eq(tg__cuda_real(i), p);
    }
    cr_assert_eq(tg_cuda_active(), 1);
    /* not a wrapped variant: handed back untouched */
    void *init = real("cuInit");
    cr_assert_eq(tg__cuda_wrap(init), init);
    cr_assert_null(tg__cuda_wrap(NULL));
}

Test(cuda_hooks, off_mode_hands_out_real_pointers)
{
    tg_opts.mode = TG_MODE_OFF;
    void *p = real("cuLaunchKernel");
    cr_assert_eq(tg__cuda_wrap(p), p);
    cr_assert_eq(tg_cuda_active(), 0);
}

Test(cuda_hooks, launch_is_forwarded_and_recorded)
{
    CUresult (*create)(CUstream *, unsigned) = (CUresult(*)(CUstream *, unsigned))real("cuStreamCreate");
    CUresult (*setcur)(CUcontext) = (CUresult(*)(CUcontext))real("cuCtxSetCurrent");
    launch_fn launch = (launch_fn)wrapped("cuLaunchKernel");
    CUstream s;
    cr_assert_eq(setcur((CUcontext)fk_ctx(2)), CUDA_SUCCESS);
    cr_assert_eq(create(&s, 0), CUDA_SUCCESS);
    cr_assert_eq(setcur((CUcontext)fk_ctx(0)), CUDA_SUCCESS);

    struct tg_thread *t = tg__self();
    uint32_t seq0 = t->last.seq;
    cr_assert_eq(launch((CUfunction)0x1234, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL), CUDA_SUCCESS);
    cr_assert_eq(fk_count("cuLaunchKernel"), 1);
    cr_assert_eq(tg_cuda_count(TG_FN_cuLaunchKernel), 1);
    cr_assert_eq(t->last.fn, TG_FN_cuLaunchKernel);
    cr_assert_eq(t->last.kind, TG_CUDA_LAUNCH);
    cr_assert_eq(t->last.stream, (uint64_t)(uintptr_t)s);
    cr_assert_eq(t->last.func, 0x1234);
    cr_assert_eq(t->last.device, 2, "stream made in device 2's context");
    cr_assert_eq(t->last.inside, 0);
    cr_assert_eq(t->last.seq % 2, 0);
    cr_assert_eq(t->last.seq, seq0 + 4, "two seqlock updates: entry and exit");
    cr_assert(t->last.t_enter > 0 && t->last.t_exit >= t->last.t_enter);
    cr_assert_eq(t->session_launches, 0, "not inside a tuner session");

    /* NULL stream: the current context's device */
    cr_assert_eq(setcur((CUcontext)fk_ctx(3)), CUDA_SUCCESS);
    cr_assert_eq(launch((CUfunction)0x1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    cr_assert_eq(t->last.device, 3);
    /* cuLaunchKernelEx takes its stream from the config */
    CUresult (*lex)(const CUlaunchConfig *, CUfunction, void **, void **) =
        (CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))wrapped("cuLaunchKernelEx_ptsz");
    CUlaunchConfig cfg = {.gridDimX = 1, .hStream = s};
    cr_assert_eq(lex(&cfg, (CUfunction)0x77, NULL, NULL), CUDA_SUCCESS);
    cr_assert_eq(t->last.fn, TG_FN_cuLaunchKernelEx_ptsz);
    cr_assert_eq(t->last.stream, (uint64_t)(uintptr_t)s);
    cr_assert_eq(t->last.device, 2);
    cr_assert_eq(fk_count("cuLaunchKernelEx_ptsz"), 1);
    cr_assert_eq(fk_count("cuLaunchKernelEx"), 0);
}

Test(cuda_hooks, destroyed_stream_handles_are_not_trusted_from_the_cache)
{
    CUresult (*create)(CUstream *, unsigned) = (CUresult(*)(CUstream *, unsigned))real("cuStreamCreate");
    CUresult (*destroy)(CUstream) = (CUresult(*)(CUstream))wrapped("cuStreamDestroy_v2");
    CUresult (*ssync)(CUstream) = (CUresult(*)(CUstream))wrapped("cuStreamSynchronize");
    CUstream s;
    cr_assert_eq(create(&s, 0), CUDA_SUCCESS);
    cr_assert_eq(ssync(s), CUDA_SUCCESS);
    cr_assert_eq(tg__self()->last.device, 0);
    cr_assert_eq(destroy(s), CUDA_SUCCESS);
    cr_assert_eq(tg_cuda_count(TG_FN_cuStreamDestroy_v2), 1);
    cr_assert_eq(tg__self()->last.fn, TG_FN_cuStreamSynchronize, "OTHER rows are not 'last'");
    /* the fake now says "invalid handle": a fresh lookup, not the cached 0 */
    cr_assert_eq(ssync(s), CUDA_SUCCESS);
    cr_assert_eq(tg__self()->last.device, -1);
}

/* A stream destroyed while the thread is busy inside tunerguard (garbage
 * collection freeing it during tunerguard's own Python call): the driver
 * call passes straight through, unrecorded, but the handle may be reused
 * all the same, so the cache's generation moves on. */
Test(cuda_hooks, stream_destroyed_while_busy_is_not_trusted_from_the_cache)
{
    CUresult (*create)(CUstream *, unsigned) = (CUresult(*)(CUstream *, unsigned))real("cuStreamCreate");
    CUresult (*destroy)(CUstream) = (CUresult(*)(CUstream))wrapped("cuStreamDestroy_v2");
    CUresult (*ssync)(CUstream) = (CUresult(*)(CUstream))wrapped("cuStreamSynchronize");
    CUstream s;
    cr_assert_eq(create(&s, 0), CUDA_SUCCESS);
    cr_assert_eq(ssync(s), CUDA_SUCCESS);
    cr_assert_eq(tg__self()->last.device, 0);
    tg__self()->busy = 1;
    cr_assert_eq(destroy(s), CUDA_SUCCESS);
    tg__self()->busy = 0;
    cr_assert_eq(tg_cuda_count(TG_FN_cuStreamDestroy_v2), 0, "busy: not counted");
    /* the fake now says "invalid handle": a fresh lookup, not the cached 0 */
    cr_assert_eq(ssync(s), CUDA_SUCCESS);
    cr_assert_eq(tg__self()->last.device, -1, "the destroyed handle's device came from the cache");
}

Test(cuda_hooks, busy_thread_passes_straight_through)
{
    launch_fn launch = (launch_fn)wrapped("cuLaunchKernel");
    struct tg_thread *t = tg__self();
    t->busy = 1;
    cr_assert_eq(launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    t->busy = 0;
    cr_assert_eq(fk_count("cuLaunchKernel"), 1);
    cr_assert_eq(tg_cuda_count(TG_FN_cuLaunchKernel), 0);
    cr_assert_eq(t->last.kind, TG_CUDA_NONE);
}

static void *gpa2_lookup(gpa2_fn g, const char *sym, int ver, cuuint64_t fl,
                         CUdriverProcAddressQueryResult *st)
{
    void *p = (void *)0xdead;
    cr_assert_eq(g(sym, &p, ver, fl, st), CUDA_SUCCESS, "%s@%d/%llu", sym, ver, (unsigned long long)fl);
    return p;
}

Test(cuda_hooks, gpa_v2_hands_out_the_wrapper_of_the_variant_the_driver_chose)
{
    gpa2_fn g = (gpa2_fn)wrapped("cuGetProcAddress_v2");
    cr_assert_eq((void *)g, tg__cuda_wrapper(TG_FN_cuGetProcAddress_v2));
    CUdriverProcAddressQueryResult st;
    /* cudart's bootstrap: the self-reference, by the ABI actually returned */
    cr_assert_eq(gpa2_lookup(g, "cuGetProcAddress", 12000, 0, &st), tg__cuda_wrapper(TG_FN_cuGetProcAddress_v2));
    cr_assert_eq(gpa2_lookup(g, "cuGetProcAddress", 11030, 0, &st), tg__cuda_wrapper(TG_FN_cuGetProcAddress));
    /* same name, different signature by version */
    cr_assert_eq(gpa2_lookup(g, "cuCtxSynchronize", 2000, 0, &st), tg__cuda_wrapper(TG_FN_cuCtxSynchronize));
    cr_assert_eq(gpa2_lookup(g, "cuCtxSynchronize", 13000, 0, &st), tg__cuda_wrapper(TG_FN_cuCtxSynchronize_v2));
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
    /* per-thread default stream by flag */
    cr_assert_eq(gpa2_lookup(g, "cuLaunchKernel", 4000, 0, &st), tg__cuda_wrapper(TG_FN_cuLaunchKernel));
    cr_assert_eq(gpa2_lookup(g, "cuLaunchKernel", 7000, 2, &st), tg__cuda_wrapper(TG_FN_cuLaunchKernel_ptsz));
    cr_assert_eq(gpa2_lookup(g, "cuLaunchKernel", 12000, 1, &st), tg__cuda_wrapper(TG_FN_cuLaunchKernel));
    cr_assert_eq(gpa2_lookup(g, "cuStreamSynchronize", 7000, 2, &st), tg__cuda_wrapper(TG_FN_cuStreamSynchronize_ptsz));
    cr_assert_eq(gpa2_lookup(g, "cuMemcpyDtoH", 7000, 2, &st), tg__cuda_wrapper(TG_FN_cuMemcpyDtoH_v2_ptds));
    cr_assert_eq(gpa2_lookup(g, "cuMemcpyDtoHAsync", 3020, 0, &st), tg__cuda_wrapper(TG_FN_cuMemcpyDtoHAsync_v2));
    cr_assert_eq(gpa2_lookup(g, "cuEventQuery", 12000, 2, &st), tg__cuda_wrapper(TG_FN_cuEventQuery),
                 "no per-thread variant: the legacy one");
    /* pass-through of everything else, status untouched */
    cr_assert_eq(gpa2_lookup(g, "cuInit", 2000, 0, &st), dlsym(lib, "cuInit"));
    cr_assert_null(gpa2_lookup(g, "cuNoSuchThing", 12000, 0, &st));
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    cr_assert_null(gpa2_lookup(g, "", 0, 0, &st));
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    cr_assert_null(gpa2_lookup(g, "cuCtxSynchronize", 1000, 0, &st));
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    void *p = (void *)0xdead;
    cr_assert_eq(g("cuLaunchKernel", &p, 99000, 0, &st), CUDA_ERROR_INVALID_VALUE, "error code passed back");
    /* a variant tunerguard does not know (not exported): unwrapped */
    fk_set_version(13100);
    void *v99 = gpa2_lookup(g, "cuLaunchKernel", 13100, 0, &st);
    cr_assert_eq(v99, ((void *(*)(void))real("fakecuda_unexported_launch"))());
    cr_assert_eq(((launch_fn)v99)(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    cr_assert_eq(fk_count("cuLaunchKernel_v99"), 1);
    cr_assert_eq(tg_cuda_count(TG_FN_cuLaunchKernel), 0);
}

Test(cuda_hooks, gpa_v1_and_calls_through_it_reach_the_right_variant)
{
    gpa1_fn g = (gpa1_fn)wrapped("cuGetProcAddress");
    void *p = NULL;
    cr_assert_eq(g("cuGetProcAddress", &p, 11030, 0), CUDA_SUCCESS);
    cr_assert_eq(p, (void *)g);
    cr_assert_eq(g("cuCtxSynchronize", &p, 13000, 0), CUDA_SUCCESS);
    cr_assert_eq(((CUresult(*)(CUcontext))p)((CUcontext)fk_ctx(1)), CUDA_SUCCESS);
    cr_assert_eq(fk_count("cuCtxSynchronize_v2"), 1);
    cr_assert_eq(fk_count("cuCtxSynchronize"), 0);
    cr_assert_eq(tg_cuda_count(TG_FN_cuCtxSynchronize_v2), 1);
    cr_assert_eq(tg__self()->last.device, 1, "ctx argument decides the device");
    cr_assert_eq(tg_cuda_count(TG_FN_cuGetProcAddress), 2);
}

Test(cuda_hooks, inside_a_session_counts_and_captures)
{
    launch_fn launch = (launch_fn)wrapped("cuLaunchKernel_ptsz");
    CUresult (*csync)(void) = (CUresult(*)(void))wrapped("cuCtxSynchronize");
    CUresult (*mload)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))wrapped("cuModuleLoadData");
    struct tg_thread *t = tg__self();
    t->held_slot[0] = 0xff; /* a session in no tuner's slots (guard/session.c sets both) */
    t->nheld = 1;
    launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    cr_assert_eq(csync(), CUDA_SUCCESS);
    cr_assert_eq(t->session_launches, 2);
    cr_assert_eq(t->session_syncs, 1);
    CUmodule m;
    cr_assert_eq(mload(&m, "mod"), CUDA_SUCCESS);
    cr_assert_eq(t->session_syncs, 1, "module loads are not syncs");
    cr_assert_eq(t->last.kind, TG_CUDA_MODULE);
    cr_assert(t->last.nframes >= 0 && t->last.nframes <= TG_MAX_NATIVE_FRAMES);
    t->nheld = 0;
}

/* The unwind of a blocking call inside a session (up to TG_MAX_NATIVE_FRAMES
 * frames) runs before the seqlock write section of t->last, never inside it:
 * a reader (a race report on another thread, cuda/cuda_record.c tg_cuda_call_read) retries a
 * bounded number of times, then gives up.  The stand-in libunwind
 * (FAKEUNWIND_LIB, loaded before tunerguard's dlopen("libunwind.so.8"), which
 * then finds it by soname) looks at the record while the unwind runs. */
static struct tg_thread *probe_rec;
static int probe_calls, probe_odd;
static void probe_seq(void)
{
    probe_calls++;
    probe_odd += (int)(__atomic_load_n(&probe_rec->last.seq, __ATOMIC_RELAXED) & 1);
}

Test(cuda_hooks, the_stack_is_unwound_outside_the_record_write_section)
{
    char path[4096];
#ifdef FAKEUNWIND_LIB
    snprintf(path, sizeof path, "%s", FAKEUNWIND_LIB);
#else
    /* a build that only names the fake driver (cmake/tsan.cmake): the
     * stand-in lies beside it, tests/fakecuda/unwind/ */
    snprintf(path, sizeof path, "%s", FAKECUDA_LIB);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
             "unwind/libunwind.so.8");
    if (access(path, R_OK) != 0) {
        cr_log_info("skipped: no stand-in libunwind at %s\n", path);
        return;
    }
#endif
    void *uw = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert(uw, "dlopen %s: %s", path, dlerror());
    void (*set_probe)(void (*)(void)) = (void (*)(void (*)(void)))dlsym(uw, "fakeunwind_set_probe");
    cr_assert(set_probe);
    tg_native_init(); /* its warm-up unwind runs before the probe is set */
    CUresult (*csync)(void) = (CUresult(*)(void))wrapped("cuCtxSynchronize");
    struct tg_thread *t = tg__self();
    probe_rec = t;
    set_probe(probe_seq);
    t->held_slot[0] = 0xff; /* a session in no tuner's slots (guard/session.c sets both) */
    t->nheld = 1;
    cr_assert_eq(csync(), CUDA_SUCCESS);
    t->nheld = 0;
    cr_assert_eq(probe_calls, 1, "the capture did not go through the stand-in unwinder");
    cr_assert_eq(probe_odd, 0, "the stack was unwound inside the seqlock write section");
    /* what was unwound still lands in the record: 8 frames, the capture's
     * own two (tg_native_capture, the wrapper) skipped */
    cr_assert_eq(t->last.nframes, 6);
    cr_assert_eq(t->last.frames[0], (void *)0x1002);
    cr_assert_eq(t->last.frames[5], (void *)0x1007);
    cr_assert_eq(t->last.seq % 2, 0);
}

Test(cuda_hooks, kernel_names_off_the_hot_path)
{
    CUresult (*mload)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))wrapped("cuModuleLoadData");
    CUresult (*getf)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))wrapped("cuModuleGetFunction");
    CUresult (*lload)(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *,
                      void **, unsigned) = (CUresult(*)(CUlibrary *, const void *, CUjit_option *, void **, unsigned,
                                                         CUlibraryOption *, void **, unsigned))wrapped("cuLibraryLoadData");
    CUresult (*getk)(CUkernel *, CUlibrary, const char *) =
        (CUresult(*)(CUkernel *, CUlibrary, const char *))wrapped("cuLibraryGetKernel");
    CUmodule m;
    CUfunction f;
    CUlibrary l;
    CUkernel k;
    cr_assert_eq(mload(&m, "mod"), CUDA_SUCCESS);
    cr_assert_eq(getf(&f, m, "add_kernel"), CUDA_SUCCESS);
    cr_assert_eq(lload(&l, "lib", NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
    cr_assert_eq(getk(&k, l, "lib_kernel"), CUDA_SUCCESS);
    cr_assert_eq(tg_cuda_count(TG_FN_cuModuleGetFunction), 1);
    char buf[64];
    cr_assert_str_eq(tg_cuda_kernel_name((uintptr_t)f, buf, sizeof buf), "add_kernel");
    cr_assert_str_eq(tg_cuda_kernel_name((uintptr_t)k, buf, sizeof buf), "lib_kernel");
    cr_assert_str_eq(tg_cuda_kernel_name(0x999, buf, sizeof buf), "");
    cr_assert_str_eq(tg_cuda_kernel_name((uintptr_t)f, buf, 4), "add");
    cr_assert_eq(tg__self()->busy, 0);
    cr_assert_eq(tg__self()->last.fn, TG_FN_cuLibraryGetKernel, "name lookups are not recorded");
}

/* ---- threads ------------------------------------------------------------------- */

#define NTHREADS 8
#define NCALLS 2000
static pthread_barrier_t barrier;
static launch_fn g_launch;
static CUresult (*g_qry)(CUstream);

static void *worker(void *arg)
{
    pthread_barrier_wait(&barrier); /* all threads hammer at once */
    for (int i = 0; i < NCALLS; i++) {
        g_launch((CUfunction)arg, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        g_qry(NULL);
    }
    struct tg_thread *t = tg__self();
    cr_assert_eq(t->last.fn, TG_FN_cuStreamQuery_ptsz);
    return (void *)(uintptr_t)(t->tid != 0);
}

Test(cuda_hooks, many_threads_every_call_counted_once)
{
    g_launch = (launch_fn)wrapped("cuLaunchKernel");
    g_qry = (CUresult(*)(CUstream))wrapped("cuStreamQuery_ptsz");
    pthread_t th[NTHREADS];
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    for (uintptr_t i = 0; i < NTHREADS; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, worker, (void *)(i + 1)), 0);
    for (int i = 0; i < NTHREADS; i++) {
        void *ok;
        pthread_join(th[i], &ok);
        cr_assert(ok);
    }
    cr_assert_eq(fk_count("cuLaunchKernel"), NTHREADS * NCALLS);
    cr_assert_eq(tg_cuda_count(TG_FN_cuLaunchKernel), NTHREADS * NCALLS);
    cr_assert_eq(tg_cuda_count(TG_FN_cuStreamQuery_ptsz), fk_count("cuStreamQuery_ptsz"));
}

/* ---- the thread inside a blocking call, seen from another thread ------------- */

static struct tg_thread *_Atomic parked_rec;
static CUresult (*g_sync2)(CUcontext);

static void *parker(void *arg)
{
    struct tg_thread *t = tg__self();
    t->held_slot[0] = 0xff; /* a session in no tuner's slots (guard/session.c sets both) */
    t->nheld = 1;
    atomic_store(&parked_rec, t);
    CUresult rc = g_sync2((CUcontext)arg);
    t->nheld = 0;
    return (void *)(uintptr_t)(rc == CUDA_SUCCESS);
}

Test(cuda_hooks, inside_flag_is_up_while_the_driver_blocks)
{
    g_sync2 = (CUresult(*)(CUcontext))wrapped("cuCtxSynchronize_v2");
    cr_assert_eq(fk_gate_arm(), 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, parker, fk_ctx(1)), 0);
    cr_assert_eq(fk_gate_wait_parked(10.0), 1);
    struct tg_thread *t = atomic_load(&parked_rec);
    uint32_t seq = __atomic_load_n(&t->last.seq, __ATOMIC_ACQUIRE);
    cr_assert_eq(seq % 2, 0, "not mid-update while parked");
    cr_assert_eq(t->last.inside, 1);
    cr_assert_eq(t->last.fn, TG_FN_cuCtxSynchronize_v2);
    cr_assert_eq(t->last.kind, TG_CUDA_SYNC);
    cr_assert_eq(t->last.device, 1);
    cr_assert_eq(t->last.t_exit, 0);
    cr_assert_eq(t->session_syncs, 1);
    fk_gate_open();
    void *ok;
    pthread_join(th, &ok);
    cr_assert(ok);
}

Test(cuda_hooks, fork_child_starts_with_zero_counts)
{
    launch_fn launch = (launch_fn)wrapped("cuLaunchKernel");
    launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    cr_assert_eq(tg_cuda_count(TG_FN_cuLaunchKernel), 1);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int bad = tg_cuda_count(TG_FN_cuLaunchKernel) != 0;
        launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        bad |= tg_cuda_count(TG_FN_cuLaunchKernel) != 1;
        bad |= !tg_cuda_active(); /* the table stays valid: same address space */
        _exit(bad);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child saw stale counts");
    cr_assert_eq(tg_cuda_count(TG_FN_cuLaunchKernel), 1);
}
