/* A stand-in libunwind.so.8 for tests/unit/test_cuda_hooks.c: tunerguard's
 * native capture (reports/native_stack.c) dlopens "libunwind.so.8" and calls
 * its unw_backtrace; a test that loaded this file first (same soname) gets
 * this one.  unw_backtrace calls the probe the test installed (to look at the
 * capturing thread's state while the unwind runs), then reports n fixed
 * frames 0x1000, 0x1001, ...  Its first call opens a pipe, as libunwind's
 * first unwind does (its address-validation pipe): tunerguard uses an
 * unw_backtrace only when it found that pipe. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

static void (*probe)(void);

API void fakeunwind_set_probe(void (*p)(void))
{
    probe = p;
}

API int unw_backtrace(void **buf, int n)
{
    static int pipe_fds[2] = {-1, -1};
    if (pipe_fds[0] < 0 && pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
        pipe_fds[0] = pipe_fds[1] = -1;
    if (probe)
        probe();
    int k = 0;
    for (; k < n && k < 8; k++)
        buf[k] = (void *)(uintptr_t)(0x1000 + k);
    return k;
}
