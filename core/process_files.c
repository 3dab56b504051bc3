/* Report file creation and the files the library reads (see process.h).
 * In the core library: the loader keeps the process facts (core/process.c)
 * and shares the two this file reads, the stem and its state, and the file
 * id, through the tg__proc_* names below. */
#include "core/process.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The loader's (core/process.c). */
extern _Atomic int tg__proc_facts_state;
extern char tg__proc_facts_stem[TG_PROC_STEM_MAX + 1];
extern _Atomic pid_t tg__proc_id_pid;
extern _Atomic uint64_t tg__proc_id_token;
void tg__proc_compute(void); /* the facts, computed once, said nothing */
#define facts_state tg__proc_facts_state
#define facts_stem tg__proc_facts_stem
#define id_pid tg__proc_id_pid
#define id_token tg__proc_id_token

/* ---- file creation (async-signal-safe) ------------------------------------ */

static const char *kind_of(mode_t m);

struct name {
    char *buf;
    size_t len, cap;
};

static void put_str(struct name *n, const char *s)
{
    while (*s && n->len + 1 < n->cap)
        n->buf[n->len++] = *s++;
    n->buf[n->len] = '\0';
}

static void put_u64(struct name *n, uint64_t v)
{
    char tmp[24];
    int i = (int)sizeof tmp - 1;
    tmp[i] = '\0';
    do
        tmp[--i] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    put_str(n, tmp + i);
}

static void make_name(char *buf, size_t cap, const char *stem, pid_t pid, uint64_t token, const char *ext)
{
    struct name n = {buf, 0, cap};
    buf[0] = '\0';
    put_str(&n, stem);
    put_str(&n, ".");
    put_u64(&n, (uint64_t)pid);
    if (token) {
        put_str(&n, ".");
        put_u64(&n, token);
    }
    put_str(&n, ext);
}

/* A file of any report kind already carries this id (ours or not). */
static int id_taken(const char *stem, pid_t pid, uint64_t token, char *buf, size_t cap)
{
    static const char *const exts[] = {".txt", ".jsonl", ".trace.json"};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        struct stat sb;
        make_name(buf, cap, stem, pid, token, exts[i]);
        if (lstat(buf, &sb) == 0)
            return 1;
    }
    return 0;
}

/* The directory of stem is writable by others (or cannot be checked). */
static int dir_shared(const char *stem, char *buf, size_t cap)
{
    const char *slash = strrchr(stem, '/');
    size_t len = slash ? (size_t)(slash - stem) : 0;
    if (len >= cap)
        return 1;
    if (!slash) {
        buf[0] = '.';
        len = 1;
    } else if (len == 0) {
        buf[0] = '/';
        len = 1;
    } else {
        memcpy(buf, stem, len);
    }
    buf[len] = '\0';
    struct stat sb;
    if (stat(buf, &sb) < 0)
        return 1;
    return (sb.st_mode & S_IWOTH) != 0;
}

static uint64_t random_token(int attempt)
{
    uint32_t v = 0;
    if (syscall(SYS_getrandom, &v, sizeof v, GRND_NONBLOCK) != (long)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 17) ^
                     (uint64_t)syscall(SYS_gettid) ^ (uint64_t)attempt * 0x9e3779b97f4a7c15ull;
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 27;
        v = (uint32_t)x;
    }
    return v ? v : 1;
}

static int open_new(const char *path, int flags, mode_t mode)
{
    int fd;
    do
        fd = open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
}

/* Remove a file this call created, unless its name now points elsewhere. */
static void undo(struct tg_proc_file *f)
{
    struct stat a, b;
    if (fstat(f->fd, &a) == 0 && lstat(f->path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        unlink(f->path);
    close(f->fd);
    f->fd = -1;
}

int tg_proc_create(struct tg_proc_file *f, int n, int flags)
{
    if (atomic_load_explicit(&facts_state, memory_order_acquire) != 2)
        tg__proc_compute(); /* not from a signal handler: callers there computed before */
    const char *stem = facts_stem;
    for (int i = 0; i < n; i++) {
        f[i].fd = -1;
        f[i].err = 0;
        f[i].path[0] = '\0';
    }
    if (n <= 0)
        return -1;
    if (!stem[0]) {
        f[0].err = ENAMETOOLONG;
        return -1;
    }
    mode_t mode = dir_shared(stem, f[0].path, sizeof f[0].path) ? 0600 : 0644;
    pid_t pid = getpid();
    int known = atomic_load_explicit(&id_pid, memory_order_acquire) == pid;
    uint64_t known_token = known ? atomic_load_explicit(&id_token, memory_order_relaxed) : 0;
    for (int attempt = 0; attempt < 16; attempt++) {
        uint64_t token = attempt == 0 ? known_token : random_token(attempt);
        /* Our own id was checked when it was chosen; any other must be
         * free for every report kind, so that one id names one process. */
        if (!(attempt == 0 && known) && id_taken(stem, pid, token, f[0].path, sizeof f[0].path))
            continue;
        int retry = 0;
        for (int i = 0; i < n && !retry; i++) {
            make_name(f[i].path, sizeof f[i].path, stem, pid, token, f[i].ext);
            f[i].fd = open_new(f[i].path, flags, mode);
            if (f[i].fd >= 0)
                continue;
            f[i].err = errno;
            if (f[i].err == EEXIST)
                retry = 1;
            else if (i == 0)
                return -1;
        }
        if (retry) {
            for (int i = 0; i < n; i++)
                if (f[i].fd >= 0)
                    undo(&f[i]);
            continue;
        }
        if (atomic_load_explicit(&id_pid, memory_order_relaxed) != pid) {
            atomic_store_explicit(&id_token, token, memory_order_relaxed);
            atomic_store_explicit(&id_pid, pid, memory_order_release);
        }
        return 0;
    }
    f[0].err = EEXIST;
    return -1;
}

void tg_proc_note_taken(const struct tg_proc_file *f)
{
    static const char *const exts[] = {".txt", ".jsonl", ".trace.json"};
    static _Atomic pid_t said_pid;
    pid_t pid = getpid();
    if (f->fd < 0 || atomic_load(&said_pid) == pid)
        return;
    char plain[TG_PROC_PATH_MAX];
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        struct stat sb;
        make_name(plain, sizeof plain, facts_stem, pid, 0, exts[i]);
        if (strcmp(plain, f->path) == 0)
            return; /* the common name: nothing was in the way */
        if (lstat(plain, &sb) == 0 && !S_ISREG(sb.st_mode) && atomic_exchange(&said_pid, pid) != pid) {
            tg__warn("%s is %s, not a report file of this process: left alone; writing %s instead", plain,
                     kind_of(sb.st_mode), f->path);
            return;
        }
    }
}

/* ---- files the library reads ---------------------------------------------- */

static const char *kind_of(mode_t m)
{
    if (S_ISLNK(m))
        return "a symbolic link";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a plain file";
}

int tg_proc_open_read(const char *path, const char **kind)
{
    int fd;
    *kind = NULL;
    do
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        *kind = kind_of(sb.st_mode);
        close(fd);
        return -2;
    }
    return fd;
}

