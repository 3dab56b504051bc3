/* The preload's binding to the core (loader/core_api.h): dlopen of
 * libtunerguard_core.so from the loader's own directory, or, where no file of
 * that name is there, of the copy embedded in the loader's own file (the
 * section .tg_core, loader/core_embed.c: the one file a user copies is the
 * whole tool).  Preload library only (the static archive binds with
 * tests/unit/core_static.c).
 *
 * The directory is the loader's file as the dynamic loader knows it
 * (dladdr on a loader function: the LD_PRELOAD entry, or the path a library
 * search found).  A relative LD_PRELOAD entry is resolved by the
 * constructor (tg__core_note_dir), against the directory the process
 * started in, as the dynamic loader resolved it.
 *
 * dlopen flags: RTLD_NOW, so every binding of the core is made here, once,
 * under the load's lock, and no lazy PLT resolution runs the dynamic linker
 * later from inside a hook (a driver callback, a signal handler, a fork
 * child); RTLD_LOCAL, so nothing in the process binds to the core's names
 * (it exports tg_core_entry alone); RTLD_NODELETE, because the forwarders
 * jump into it for the rest of the process. */
#include "loader/core_api.h"
#include "core/real_sym.h"
#include "core/startup.h"
#include "tg_build_id.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TG_CORE_FILE "libtunerguard_core.so"

/* The loader's own file made absolute at start-up, where it was preloaded
 * by a relative path (tg__core_note_dir); NULL otherwise.  Allocated (by
 * realpath) only then: a 4 KiB buffer in .bss would move the variables
 * every process writes at start-up onto a page of their own. */
static char *self_at_start;

void tg__core_note_dir(void)
{
    Dl_info me;
    if (dladdr((void *)tg__core_bind, &me) && me.dli_fname && me.dli_fname[0] != '/')
        self_at_start = realpath(me.dli_fname, NULL);
}

/* The loader's own file, absolute, into *self, and dir/TG_CORE_FILE into
 * out; 0, or -1 (err says why). */
static int core_path(char *out, size_t len, const char **self_out, char *err, size_t errlen)
{
    Dl_info me;
    if (!dladdr((void *)tg__core_bind, &me) || !me.dli_fname || !me.dli_fname[0]) {
        snprintf(err, errlen, "cannot find the core library: the loader's own path is unknown");
        return -1;
    }
    const char *self = me.dli_fname;
    if (self[0] != '/') {
        /* Resolved by the constructor, before the program could change
         * directory; never against the directory it is in now, where a
         * file of that name is not ours to run. */
        if (!self_at_start) {
            snprintf(err, errlen, "cannot find the core library: the loader's own path %s is relative and "
                     "was not made absolute at start-up", self);
            return -1;
        }
        self = self_at_start;
    }
    const char *slash = strrchr(self, '/');
    int dirlen = slash ? (int)(slash - self) : 1;
    const char *dir = slash ? self : ".";
    if (snprintf(out, len, "%.*s/%s", dirlen, dir, TG_CORE_FILE) >= (int)len) {
        snprintf(err, errlen, "cannot load the core library: the path beside %s is too long", self);
        return -1;
    }
    *self_out = self;
    return 0;
}

/* ---- the embedded copy ---------------------------------------------------------
 * Read from the loader's file with raw system calls: the loader imports
 * `syscall` already, and each imported name costs every process bytes of
 * the two pages its headers fit in (docs/benchmarks.md, "Start-up cost"). */

static long sys_pread(int fd, void *buf, size_t n, off_t off)
{
    long r;
    while ((r = syscall(SYS_pread64, fd, buf, n, off)) < 0 && errno == EINTR)
        ;
    return r;
}

/* What errno e says, for the warning line, without importing strerror
 * (the reason above): the answers these calls give where the copy cannot
 * be read or put in memory. */
static const char *why_text(int e, char *buf, size_t len)
{
    switch (e) {
    case ENOSYS: return "memfd_create not available (ENOSYS)";
    case EPERM: return "not permitted (EPERM: a seccomp filter?)";
    case EACCES: return "permission denied (EACCES)";
    case EMFILE: case ENFILE: return "too many open files";
    case ENOMEM: return "out of memory (ENOMEM)";
    case ENOSPC: return "no space (ENOSPC)";
    case EINVAL: return "invalid argument (EINVAL)";
    case EIO: return "input/output error (EIO)";
    }
    snprintf(buf, len, "errno %d", e);
    return buf;
}

/* The fds a bind holds open (the loader's file, the memory file), for the
 * fork child of a process where another thread was binding: the child
 * closes them (tg__core_bind_atfork_child), it does not have that thread.
 * Slots taken by CAS; a bind that finds none free is not tracked (more
 * threads than slots binding at once). */
#define TG_BIND_FDS 8
static _Atomic int bind_fds[TG_BIND_FDS] = {-1, -1, -1, -1, -1, -1, -1, -1};

static int bind_open(int fd)
{
    for (int i = 0; fd >= 0 && i < TG_BIND_FDS; i++) {
        int free_ = -1;
        if (atomic_compare_exchange_strong(&bind_fds[i], &free_, fd))
            break;
    }
    return fd;
}

static void bind_close(int fd)
{
    for (int i = 0; i < TG_BIND_FDS; i++) {
        int mine = fd;
        if (atomic_compare_exchange_strong(&bind_fds[i], &mine, -1))
            break;
    }
    syscall(SYS_close, fd);
}

void tg__core_bind_atfork_child(void)
{
    for (int i = 0; i < TG_BIND_FDS; i++) {
        int fd = atomic_exchange(&bind_fds[i], -1);
        if (fd >= 0)
            syscall(SYS_close, fd);
    }
}

/* memcmp(a, b, n) == 0, without importing memcmp (the reason above). */
static int same_bytes(const void *a, const void *b, size_t n)
{
    const unsigned char *p = a, *q = b;
    while (n && *p == *q)
        n--, p++, q++;
    return n == 0;
}

/* Offset and size of the section .tg_core in the ELF file fd; 0, or -1. */
static int find_embedded(int fd, off_t *off, size_t *size)
{
    ElfW(Ehdr) eh;
    ElfW(Shdr) sh, strsh;
    static const char want[] = ".tg_core";
    char name[sizeof want];
    if (sys_pread(fd, &eh, sizeof eh, 0) != (long)sizeof eh || !same_bytes(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_shentsize != sizeof sh || eh.e_shstrndx >= eh.e_shnum ||
        sys_pread(fd, &strsh, sizeof strsh, (off_t)(eh.e_shoff + (ElfW(Off))eh.e_shstrndx * sizeof sh)) !=
            (long)sizeof strsh)
        return -1;
    for (unsigned i = 1; i < eh.e_shnum; i++) {
        if (sys_pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + (ElfW(Off))i * sizeof sh)) != (long)sizeof sh)
            return -1;
        if (sh.sh_type != SHT_PROGBITS || (sh.sh_flags & SHF_ALLOC) || sh.sh_name >= strsh.sh_size ||
            sys_pread(fd, name, sizeof name, (off_t)(strsh.sh_offset + sh.sh_name)) != (long)sizeof name ||
            !same_bytes(name, want, sizeof want))
            continue;
        *off = (off_t)sh.sh_offset;
        *size = (size_t)sh.sh_size;
        return 0;
    }
    return -1;
}

/* The copy of the core in the loader's file self, in an anonymous memory
 * file (memfd: nothing written to any disk); its /proc/self/fd path into
 * out.  Returns the fd (the caller closes it once dlopen is done), or -1
 * with err saying why.  Only where the core is needed and not beside the
 * loader: one fd for the time of the dlopen, no allocation. */
static int embedded_core(const char *self, char *out, size_t len, char *err, size_t errlen)
{
    int fd = bind_open((int)syscall(SYS_openat, AT_FDCWD, self, O_RDONLY | O_CLOEXEC));
    if (fd < 0) {
        snprintf(err, errlen, "cannot load the core library (%s: not there, and %s cannot be read for the "
                 "copy inside it)", TG_CORE_FILE, self);
        return -1;
    }
    off_t off;
    size_t size;
    errno = 0;
    if (find_embedded(fd, &off, &size) < 0 || size == 0) {
        int why = errno;
        char b[24];
        bind_close(fd);
        if (why)
            snprintf(err, errlen, "cannot load the core library (%s: not beside %s, and reading the copy inside "
                     "it failed: %s)", TG_CORE_FILE, self, why_text(why, b, sizeof b));
        else
            snprintf(err, errlen, "cannot load the core library (%s: not beside %s, nor a copy inside it)",
                     TG_CORE_FILE, self);
        return -1;
    }
    /* Writing more than RLIMIT_FSIZE into the memory file raises SIGXFSZ,
     * which kills the process: say so instead. */
    struct rlimit fl;
    if (syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &fl) == 0 && fl.rlim_cur != RLIM_INFINITY &&
        fl.rlim_cur < size) {
        bind_close(fd);
        snprintf(err, errlen, "cannot load the core library (%s: not beside %s, and its copy inside it, %zu "
                 "bytes, is over the file-size limit of %llu bytes, ulimit -f)", TG_CORE_FILE, self, size,
                 (unsigned long long)fl.rlim_cur);
        return -1;
    }
    int mfd = bind_open((int)syscall(SYS_memfd_create, TG_CORE_FILE, MFD_CLOEXEC));
    int why = mfd < 0 ? errno : 0;
    while (mfd >= 0 && size > 0) {
        long n = syscall(SYS_sendfile, mfd, fd, &off, size); /* advances off */
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            why = n < 0 ? errno : EIO;
            bind_close(mfd);
            mfd = -1;
            break;
        }
        size -= (size_t)n;
    }
    bind_close(fd);
    if (mfd < 0) {
        char b[24];
        snprintf(err, errlen, "cannot load the core library (%s: not beside %s, and its copy inside it could "
                 "not be put in memory: %s)", TG_CORE_FILE, self, why_text(why, b, sizeof b));
        return -1;
    }
    /* A spelling of the fd's path nobody else uses: ld.so keeps the name in
     * its list of loaded objects after the fd is closed, and a dlopen of the
     * same name later (the program's own memory file on a reused fd number)
     * would be given our core instead of opening its file. */
    snprintf(out, len, "/proc/self/./fd/%d", mfd);
    return mfd;
}

const struct tg_core_api *tg__core_bind(char *err, size_t errlen)
{
    char path[PATH_MAX + sizeof TG_CORE_FILE];
    const char *self = NULL;
    if (core_path(path, sizeof path, &self, err, errlen) < 0)
        return NULL;
    int mfd = -1;
    if (syscall(SYS_faccessat, AT_FDCWD, path, F_OK) != 0 &&
        (mfd = embedded_core(self, path, sizeof path, err, errlen)) < 0)
        return NULL; /* none beside the loader, and no copy inside it */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (mfd >= 0)
        bind_close(mfd); /* mapped now (or failed): the fd is not needed */
    if (!h) {
        const char *why = dlerror(); /* consumed: no error left pending */
        snprintf(err, errlen, "cannot load the core library (%s)", why ? why : path);
        return NULL;
    }
    const struct tg_core_api *(*entry)(const char *) =
        (const struct tg_core_api *(*)(const char *))tg__real_dlsym()(h, "tg_core_entry");
    const struct tg_core_api *t = entry ? entry(TG_BUILD_ID) : NULL;
    if (!entry)
        (void)dlerror();
    if (!t) {
        snprintf(err, errlen, "cannot use the core library %s: %s", path,
                 entry ? "it is from another build than the preloaded libtunerguard.so" : "no tg_core_entry in it");
        return NULL;
    }
    return t;
}

void tg__core_ready(const struct tg_core_api *t)
{
    /* Loaded is activated: whatever needed the core may report (the report
     * path, symbolize=, trace=, the halt), before any thread can see the
     * table. */
    t->activate();
}

/* ---- one copy serves (loader/core_api.h) ---------------------------------------- */

/* Defined in loader/interpose_cuda.c; -Bsymbolic: this copy's own address. */
extern unsigned long long tunerguard_cuda_count(const char *variant);

static const char first_name[] TG_STARTUP_RODATA = "tunerguard_cuda_count";

TG_STARTUP int tg__copy_inert(void **serving)
{
    /* 0 undecided, else the answer + 1; racing first calls store the same */
    static _Atomic int inert TG_STARTUP_DATA;
    static void *_Atomic first TG_STARTUP_DATA;
    int s = atomic_load_explicit(&inert, memory_order_acquire);
    if (__builtin_expect(s == 0, 0)) {
        /* In the program's scope (its handle: RTLD_DEFAULT from a
         * -Bsymbolic object looks in the object itself first).  The real
         * dlsym: a name that is no cu* / cupti* one passes through every
         * copy's interposer, so this cannot recurse. */
        void *prog = dlopen(NULL, RTLD_LAZY);
        void *p = prog ? tg__real_dlsym()(prog, first_name) : NULL;
        if (!p)
            (void)dlerror(); /* not preloaded (a dlopen'd copy, RTLD_LOCAL): this one serves */
        s = p && p != (void *)tunerguard_cuda_count ? 2 : 1;
        atomic_store_explicit(&first, p, memory_order_relaxed);
        atomic_store_explicit(&inert, s, memory_order_release);
    }
    if (serving)
        *serving = atomic_load_explicit(&first, memory_order_relaxed);
    return s == 2;
}
