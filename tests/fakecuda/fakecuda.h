/* Test-only API of the stand-in libcuda.so.1 (tests/fakecuda/fakecuda.c).
 *
 * The fake exports the driver entry points tunerguard wraps, under their real
 * exported names and each at its own address, plus these fakecuda_* helpers.
 * Every driver call is logged (variant, tid) so a test can compare what
 * tunerguard recorded with what actually ran.  Python tests reach the same
 * functions with ctypes.CDLL("libcuda.so.1").
 *
 * All functions are thread-safe.  None of them is async-signal-safe. */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ground-truth call log -------------------------------------------- */

/* Total driver calls logged since load (or the last fakecuda_reset()),
 * fakecuda_* helpers excluded. */
unsigned long long fakecuda_calls(void);
/* Calls of one exported variant, e.g. "cuLaunchKernel_ptsz"; calls made
 * through a pointer handed out by cuGetProcAddress count under the variant
 * that pointer is.  Unknown names give 0. */
unsigned long long fakecuda_count(const char *variant);
/* Calls of `variant` made by OS thread `tid`. */
unsigned long long fakecuda_count_tid(const char *variant, int tid);
/* Entry i of the log (0-based, oldest first): its variant name, and its tid
 * into *tid.  NULL past the end or once the log (65536 entries) overflowed
 * beyond i; the counters above never overflow. */
const char *fakecuda_log_entry(unsigned long long i, int *tid);
/* Forget the log and the counters (not the gate, not the handles). */
void fakecuda_reset(void);
/* The fake's own address of an exported variant (what dlsym on the fake and
 * its cuGetProcAddress return), NULL if the fake does not export it. */
void *fakecuda_addr(const char *variant);
/* The test-only variant returned by cuGetProcAddress("cuLaunchKernel",
 * 99000, ...): same signature as cuLaunchKernel, not exported, so tunerguard
 * must pass it through unwrapped.  Its calls count as "cuLaunchKernel_v99". */
void *fakecuda_unexported_launch(void);

/* ---- the synchronize gate ---------------------------------------------- */

/* Arm the gate: the next synchronize call (cuCtxSynchronize,
 * cuCtxSynchronize_v2, cuStreamSynchronize[_ptsz], cuEventSynchronize) made
 * on any thread parks inside the fake until fakecuda_gate_open().  One thread
 * parks per arming.  Returns 0, or -1 if a thread is parked already. */
int fakecuda_gate_arm(void);
/* The same, for the next call of exactly `variant` instead: any synchronize
 * variant, or cuFuncGetName.  Returns -1 also for an unknown name. */
int fakecuda_gate_arm_on(const char *variant);
/* Block until a thread is parked in the gate: 1, or 0 after timeout_s. */
int fakecuda_gate_wait_parked(double timeout_s);
/* Release the parked thread (if any) and disarm. */
void fakecuda_gate_open(void);
/* OS tid of the thread parked in the gate now, 0 if none. */
int fakecuda_gate_parked_tid(void);

/* ---- knobs --------------------------------------------------------------- */

/* The fake's context of device dev (0..3), for cuCtxSetCurrent; NULL
 * otherwise.  Each thread starts with device 0's context current. */
void *fakecuda_ctx(int dev);

/* What cuDriverGetVersion reports (default 13000, or $FAKECUDA_DRIVER_VERSION). */
void fakecuda_set_driver_version(int v);

#ifdef __cplusplus
}
#endif

#endif
