/* A stand-in libunwind.so.8 for tests/unit/test_cuda_hooks.c: tunerguard's
 * native capture (reports/native_stack.c) dlopens "libunwind.so.8" and calls
 * its unw_backtrace; a test that loaded this file first (same soname) gets
 * this one.  unw_backtrace calls the probe the test installed (to look at the
 * capturing thread's state while the unwind runs), then reports n fixed
 * frames 0x1000, 0x1001, ... */
#include <stdint.h>

#define API __attribute__((visibility("default")))

static void (*probe)(void);

API void fakeunwind_set_probe(void (*p)(void))
{
    probe = p;
}

API int unw_backtrace(void **buf, int n)
{
    if (probe)
        probe();
    int k = 0;
    for (; k < n && k < 8; k++)
        buf[k] = (void *)(uintptr_t)(0x1000 + k);
    return k;
}
