/* CUDA driver interception: the wrapped variants (core/cuda_api.inc), their
 * real pointers, identification by address, and the queries the detectors and
 * report writers use.
 *
 * How a call gets here (notes/cuda-interception.md §1.4):
 *   PLT / dlsym(RTLD_DEFAULT)   -> exported cu* in loader/interpose_cuda.c
 *   dlsym(libcuda handle, ...)  -> loader/interpose_dlsym.c -> tg__cuda_wrap()
 *   cuGetProcAddress[_v2]       -> the gpa wrappers here   -> tg__cuda_wrap()
 * Each pointer is first resolved by the real driver, then compared with the
 * real exports: only an exact match is replaced, by the wrapper of that exact
 * variant.  Nothing at all happens before a libcuda pointer is seen.
 *
 * What a wrapper records, on the calling thread, into tg__self()->last (see
 * core/thread_state.h for the seqlock): fn, kind, device, stream, func,
 * inside, t_enter/t_exit; inside a tuner session (nheld > 0) it also
 * counts session_launches / session_syncs and, for SYNC and MODULE calls,
 * captures the native stack.  Timestamps are tg_ticks() (rdtsc on x86-64),
 * converted to CLOCK_MONOTONIC ns by whoever reads the record; a launch has
 * t_exit = t_enter (launches do not block: one clock read).
 */
#ifndef TG_CUDA_HOOKS_H
#define TG_CUDA_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "core/cuda_api.h"
#include "core/real_sym.h"
#include "core/thread_state.h"

/* ---- queries (any thread) --------------------------------------------------- */

/* Driver name of row fn ("cuCtxSynchronize_v2"), "?" if out of range.
 * Signal-safe, never allocates. */
const char *tg_cuda_fn_name(unsigned fn);

/* enum tg_cuda_kind of row fn, TG_CUDA_NONE if out of range. */
int tg_cuda_fn_kind(unsigned fn);

/* Kernel name of a CUfunction or CUkernel handle, into buf (always
 * NUL-terminated; "" if unknown or n == 0).  Asks the real cuFuncGetName,
 * then cuKernelGetName, with the calling thread's busy flag raised so nothing
 * is recorded.  A driver call: report time only, never on a hot path, not
 * signal-safe.  Returns buf. */
const char *tg_cuda_kernel_name(unsigned long long func, char *buf, size_t n);

/* 1 once a libcuda pointer has been seen and the real table resolved. */
int tg_cuda_active(void);

/* The calling thread's current device (its current context's), -1 when
 * unknown: libcuda not in use yet, no current context.  Two driver calls
 * (cuCtxGetCurrent, cuCtxGetDevice: reads of the driver's thread state); never
 * loads libcuda; allocates nothing; not async-signal-safe. */
int tg_cuda_current_device(void);

/* Calls recorded for row fn since start (or fork), all threads summed.
 * Relaxed reads: exact once the counting threads are quiescent. */
unsigned long long tg_cuda_count(unsigned fn);

/* The row whose name is `name`, -1 if none. */
int tg_cuda_fn_index(const char *name);

/* A copy of thread th's last recorded call (th->last), read against its
 * owner's writes (the seqlock of core/thread_state.h; the writer is
 * cuda/cuda_record.h), its times converted from the owner's clock (tg_ticks)
 * to CLOCK_MONOTONIC ns as the reports give every time.  Returns 0 when no
 * consistent copy could be read in 100 tries: *out is then zeroed, and its
 * kind TG_CUDA_NONE means "unknown", not "no call yet".  Any thread; C only,
 * allocates nothing. */
int tg_cuda_call_read(const struct tg_thread *th, struct tg_cuda_call *out);

/* ---- interception internals (loader/interpose_*.c and unit tests) ------------- */

/* tg__real_dlsym, the dlsym every look-up of ours uses: core/real_sym.h. */

/* p resolved by the real driver (a dlsym or cuGetProcAddress result): the
 * wrapper of the variant p is, or p itself when p is not a wrapped export
 * (or tunerguard is off, or p is not in libcuda).  The first libcuda pointer
 * resolves the real table (dladdr + dlopen(RTLD_NOLOAD) + real dlsym; no
 * driver call, no lock, no thread).  NULL gives NULL. */
void *tg__cuda_wrap(void *p);

/* Resolve the real table from an already-loaded libcuda.so.1 (PLT callers:
 * if our exported definition was reached, libcuda is loaded).  Returns 1 if
 * the table is ready. */
int tg__cuda_init_loaded(void);


/* The wrapper of row fn (what tg__cuda_wrap hands out), and the real pointer
 * (NULL until resolved, or if the driver lacks the variant). */
void *tg__cuda_wrapper(unsigned fn);
void *tg__cuda_real(unsigned fn);

/* Say once (verbosity >= 1) that row fn could not be wrapped or forwarded. */
void tg__cuda_missing(unsigned fn);

/* Evidence of tuning anywhere in the process, counted: a thread's first
 * tuning frame (a marked tuning method, a tuner's warmup) and its first
 * synchronize inside a session.  The check at a guarded call's return
 * (guard/session.c) looks at the other occupants only when this moved
 * during the call: an occupant that entered during it and is tuning now
 * moved it after the call began.  Written rarely (tuning sessions only),
 * read twice per guarded call: its line stays shared.  Defined in
 * cuda/cuda_record.c. */
extern _Atomic uint32_t tg__tuning_epoch;
static inline void tg_tuning_seen(void)
{
    __atomic_fetch_add(&tg__tuning_epoch, 1, __ATOMIC_RELAXED);
}

/* Typed wrappers, for the exported definitions in interpose_cuda.c. */
#define TG_CUDA_HOOK(name, kind, params, args, stream, ctx, func) CUresult tg__cuda_w_##name params;
#define TG_CUDA_GPA(name, params, args) CUresult tg__cuda_w_##name params;
#include "core/cuda_api.inc"
#undef TG_CUDA_HOOK
#undef TG_CUDA_GPA

#endif
