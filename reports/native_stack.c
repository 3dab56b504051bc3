/* Native stack capture: libunwind's unw_backtrace loaded on demand, glibc's
 * backtrace() when libunwind.so.8 is absent.  Symbolization is in
 * reports/symbolize.c.
 *
 * libunwind's descriptors: when DWARF cannot step a frame (a thread's
 * outermost frame, code without CFI), libunwind validates addresses by
 * read(2)ing one byte from and write(2)ing the address's bytes to a pipe it
 * opened once (pipe2 O_CLOEXEC|O_NONBLOCK in its first unwind), under those
 * fd numbers forever.  A program that closes its descriptors and opens files
 * gets those numbers.  So the warm-up finds that pipe (the two new FIFO
 * descriptors it opened, one read end, one write end, one inode), and every
 * capture first checks both numbers still name it (reports/own_fd.h); when
 * they do not, or the pipe was not found, glibc's backtrace() (libgcc's
 * unwinder: no descriptors) is used from then on.
 *
 * Built with ThreadSanitizer (tools/dev tsan: __SANITIZE_THREAD__), glibc's
 * backtrace() only: libunwind's per-thread trace cache is freed by a
 * thread-specific destructor that puts itself back until the last round,
 * and so runs after TSan has torn the exiting thread's state down; its
 * pthread_mutex_lock then enters TSan's interceptor and crashes
 * (tsan/3.13t: every run of bench/link_stress.py died of SIGSEGV in
 * __tsan::MutexPreLock under __nptl_deallocate_tsd).
 *
 * Why dlopen: the static libunwind.a is not PIC, so it cannot go into our
 * .so, and linking the shared one would add a runtime dependency (DESIGN.md:
 * libc/libdl/libpthread only).  RTLD_LOCAL keeps libunwind's weak
 * `backtrace` alias from replacing glibc's for the host program. */
#include "reports/native_stack.h"
#include "reports/own_fd.h"
#include "core/real_sym.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

typedef int (*tg_bt_fn)(void **, int);

/* Set once by tg_native_init() (after the warm-up), read by capture. */
static _Atomic(tg_bt_fn) tg__bt;
static pthread_once_t tg__native_once = PTHREAD_ONCE_INIT;

#define TG_CAPTURE_MAX 128         /* frames one capture may walk, skip included */

/* libunwind's validation pipe: [0] the read end, [1] the write end. */
static struct tg_own_fd tg__uw_pipe[2];

#define TG_FD_SCAN 64              /* numbers looked at above the lowest free one */

/* The lowest free descriptor number now (dup'ed and closed at once), or -1. */
static int lowest_free_fd(void)
{
    int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        fd = fcntl(1, F_DUPFD_CLOEXEC, 0);
    if (fd >= 0)
        close(fd);
    return fd;
}

/* open[i] = whether fd base+i is open (fcntl F_GETFD: no read, no write). */
static void open_fds(int base, unsigned char *open)
{
    for (int i = 0; i < TG_FD_SCAN; i++)
        open[i] = fcntl(base + i, F_GETFD) >= 0;
}

/* After libunwind's first unwind: the one pipe it opened among the numbers
 * that were free before (was[]), into tg__uw_pipe.  Returns 1 when exactly
 * one read end and one write end of one FIFO appeared. */
static int find_unwind_pipe(int base, const unsigned char *was)
{
    int end[2] = {-1, -1}, found[2] = {0, 0};
    struct stat st[2];
    for (int i = 0; i < TG_FD_SCAN; i++) {
        int fd = base + i, fl = was[i] ? -1 : fcntl(fd, F_GETFL);
        struct stat s;
        if (fl < 0 || !(fl & O_NONBLOCK) || fstat(fd, &s) != 0 || !S_ISFIFO(s.st_mode))
            continue;
        int w = (fl & O_ACCMODE) == O_WRONLY;
        if (!w && (fl & O_ACCMODE) != O_RDONLY)
            continue;
        found[w]++;
        end[w] = fd;
        st[w] = s;
    }
    if (found[0] != 1 || found[1] != 1 || st[0].st_dev != st[1].st_dev || st[0].st_ino != st[1].st_ino)
        return 0;
    tg_own_fd_set(&tg__uw_pipe[0], end[0]);
    tg_own_fd_set(&tg__uw_pipe[1], end[1]);
    return tg__uw_pipe[0].fd >= 0 && tg__uw_pipe[1].fd >= 0;
}

/* The free numbers among 0, 1, 2 (stdin, stdout, stderr closed at start)
 * held by O_PATH descriptors of "/" while libunwind opens its pipe, so that
 * the pipe never takes a standard number the program's writes to stderr
 * would go to.  held[] gets them (-1: none); release_std closes them. */
static void hold_std(int held[3])
{
    int k = 0, root = -1;
    held[0] = held[1] = held[2] = -1;
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0)
            continue;
        if (root < 0 && (root = open("/", O_PATH | O_CLOEXEC)) < 0)
            return;
        if (root <= 2) {           /* it took a hole itself */
            held[k++] = root;
            root = -1;
            continue;
        }
        int d = fcntl(root, F_DUPFD_CLOEXEC, 0);
        if (d >= 0 && d <= 2)
            held[k++] = d;
        else if (d >= 0)
            close(d);
    }
    if (root >= 0)
        close(root);
}

static void release_std(const int held[3])
{
    for (int i = 0; i < 3; i++)
        if (held[i] >= 0)
            close(held[i]);
}

static void native_init_once(void)
{
    /* Warm-up: the first unwind loads libgcc_s / fills libunwind's caches and
     * may allocate; do it here, in a normal context, not in a hook or a
     * signal handler.  glibc's is warmed up too: it takes over when
     * libunwind's pipe is lost. */
    void *tmp[8];
    backtrace(tmp, 8);
    tg_bt_fn fn = backtrace;
#ifdef __SANITIZE_THREAD__
    void *h = NULL; /* glibc's only (above) */
#else
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
#endif
    tg_bt_fn uw = h ? (tg_bt_fn)tg_real_sym(h, "unw_backtrace") : NULL;
    int held[3];
    hold_std(held);
    int base = lowest_free_fd();
    if (uw && base >= 0) {
        unsigned char was[TG_FD_SCAN];
        open_fds(base, was);
        uw(tmp, 8);
        if (find_unwind_pipe(base, was))
            fn = uw;
    }
    release_std(held);
    atomic_store_explicit(&tg__bt, fn, memory_order_release);
}

void tg_native_init(void)
{
    pthread_once(&tg__native_once, native_init_once);
}

/* noinline: the frame count to skip (this function's own) must be exact. */
__attribute__((noinline)) int tg_native_capture(void **frames, int max, int skip)
{
    tg_bt_fn fn = atomic_load_explicit(&tg__bt, memory_order_acquire);
    if (!fn || !frames || max <= 0)
        return 0;
    if (fn != backtrace && !(tg_own_fd_ok(&tg__uw_pipe[0]) && tg_own_fd_ok(&tg__uw_pipe[1]))) {
        fn = backtrace;            /* the pipe's numbers are the program's now */
        atomic_store_explicit(&tg__bt, fn, memory_order_release);
    }
    if (skip < 0)
        skip = 0;
    void *tmp[TG_CAPTURE_MAX];
    int want = max + skip + 1;     /* +1: tg_native_capture itself */
    if (want > TG_CAPTURE_MAX)
        want = TG_CAPTURE_MAX;
    int n = fn(tmp, want);
    int first = skip + 1;
    int k = 0;
    for (int i = first; i < n && k < max; i++)
        frames[k++] = tmp[i];
    return k;
}
