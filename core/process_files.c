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

/* A file of any report kind already carries this id (ours or not).  buf
 * gets names "<base>.<id><ext>" inside the folder dirfd. */
static int id_taken(int dirfd, const char *base, pid_t pid, uint64_t token, char *buf, size_t cap)
{
    static const char *const exts[] = {".txt", ".jsonl", ".trace.json"};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        struct stat sb;
        make_name(buf, cap, base, pid, token, exts[i]);
        if (fstatat(dirfd, buf, &sb, AT_SYMLINK_NOFOLLOW) == 0)
            return 1;
    }
    return 0;
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

static int open_new(int dirfd, const char *name, int flags, mode_t mode)
{
    int fd;
    do
        fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0 && fd <= 2) {
        /* A standard number free (stdio closed at start): not ours to take,
         * the program's writes to stderr would land in the report. */
        int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
        fd = hi;
    }
    return fd;
}

static int open_path(int dirfd, const char *name, int flags)
{
    int fd;
    do
        fd = openat(dirfd, name, flags | O_PATH | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    return fd;
}

/* Remove a file this call created (name: its name in dirfd), unless the name
 * now points elsewhere. */
static void undo(struct tg_proc_file *f, int dirfd, const char *name)
{
    struct stat a, b;
    if (fstat(f->fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        unlinkat(dirfd, name, 0);
    close(f->fd);
    f->fd = -1;
}

static void put_why(struct tg_proc_file *f, const char *a, const char *b, const char *c)
{
    struct name w = {f->why, 0, sizeof f->why};
    put_str(&w, a);
    put_str(&w, b);
    put_str(&w, c);
}

/* A folder others may write: world-writable, or group-writable (the group
 * may have other members; not looked up: taken as others), sticky or not. */
static int others_may_write(const struct stat *ds)
{
    return (ds->st_mode & (S_IWOTH | S_IWGRP)) != 0;
}

/* Open the folder part of stem (everything before its last '/'; "." when
 * there is none) as an O_PATH descriptor, one component at a time with
 * O_NOFOLLOW.  A symbolic link on the way is read and walked in its place
 * (up to 40, as the kernel allows) unless it lies in a folder others may
 * write and belongs neither to this user nor to that folder's owner: then
 * -1 with f->why set.  -1 with f->err on any other failure.  *base: the
 * stem's last component.  work: scratch of cap bytes (f->path).
 * Async-signal-safe: no allocation; one component name on the stack. */
static int open_folder(const char *stem, const char **base, struct tg_proc_file *f)
{
    char *w = f->path;
    const size_t cap = sizeof f->path;
    const char *slash = strrchr(stem, '/');
    *base = slash ? slash + 1 : stem;
    size_t len = slash ? (size_t)(slash - stem) : 0;
    if (len + 1 >= cap) {
        f->err = ENAMETOOLONG;
        return -1;
    }
    memcpy(w, stem, len);
    w[len] = '\0';
    int cur = open_path(AT_FDCWD, stem[0] == '/' ? "/" : ".", O_DIRECTORY);
    if (cur < 0) {
        f->err = errno;
        return -1;
    }
    char *p = w;
    int links = 0;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            return cur;
        char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char comp[256];
        if (n >= sizeof comp) {
            f->err = ENAMETOOLONG;
            break;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        /* A folder first, with O_DIRECTORY: that opening triggers an automount
         * point on the way (without it, O_PATH stops at the unmounted
         * autofs folder); ENOTDIR, then it may be a link: opened as itself. */
        int next = open_path(cur, comp, O_NOFOLLOW | O_DIRECTORY);
        if (next < 0 && errno == ENOTDIR)
            next = open_path(cur, comp, O_NOFOLLOW);
        struct stat sb, ds;
        if (next < 0 || fstat(next, &sb) < 0) {
            f->err = errno;
            if (next >= 0)
                close(next);
            break;
        }
        if (!S_ISLNK(sb.st_mode)) {
            close(cur);
            cur = next;
            if (!S_ISDIR(sb.st_mode)) {
                f->err = ENOTDIR;
                break;
            }
            p = e ? e + 1 : p + n;
            continue;
        }
        /* A symbolic link in the folder cur. */
        if (fstat(cur, &ds) < 0) {
            f->err = errno;
            close(next);
            break;
        }
        if (others_may_write(&ds) && sb.st_uid != geteuid() && sb.st_uid != ds.st_uid) {
            put_why(f, "the symbolic link '", comp,
                    "' on the way lies in a folder others may write and is neither this user's nor the "
                    "folder owner's: not followed");
            close(next);
            break;
        }
        if (++links > 40) {
            f->err = ELOOP;
            close(next);
            break;
        }
        /* New work: the link's target, then what followed the link.  The
         * rest goes to the end of the buffer first, the target is read to
         * its start (the walked part is no longer needed), then the rest
         * comes back right after it. */
        const char *rest = e ? e + 1 : p + n;
        size_t r = strlen(rest);
        if (r + 2 >= cap) {
            f->err = ENAMETOOLONG;
            close(next);
            break;
        }
        memmove(w + cap - (r + 1), rest, r + 1);
        ssize_t t = readlinkat(next, "", w, cap - (r + 1) - 1);
        close(next);
        if (t <= 0 || (size_t)t >= cap - (r + 1) - 1) {
            f->err = t < 0 ? errno : ENAMETOOLONG;
            break;
        }
        w[t] = '/';
        memmove(w + t + 1, w + cap - (r + 1), r + 1);
        if (w[0] == '/') {
            int root = open_path(AT_FDCWD, "/", O_DIRECTORY);
            if (root < 0) {
                f->err = errno;
                break;
            }
            close(cur);
            cur = root;
        }
        p = w;
    }
    close(cur);
    return -1;
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
        f[i].why[0] = '\0';
    }
    if (n <= 0)
        return -1;
    if (!stem[0]) {
        f[0].err = ENAMETOOLONG;
        return -1;
    }
    const char *base;
    int dirfd = open_folder(stem, &base, &f[0]);
    if (dirfd < 0) { /* the caller's line names the file it would have been */
        pid_t me = getpid();
        make_name(f[0].path, sizeof f[0].path, stem, me,
                  atomic_load_explicit(&id_pid, memory_order_acquire) == me
                      ? atomic_load_explicit(&id_token, memory_order_relaxed) : 0, f[0].ext);
        return -1;
    }
    struct name st = {f[0].path, 0, sizeof f[0].path}; /* the walk's scratch until the first name */
    put_str(&st, stem);
    struct stat ds;
    mode_t mode = fstat(dirfd, &ds) < 0 || others_may_write(&ds) ? 0600 : 0644;
    pid_t pid = getpid();
    int known = atomic_load_explicit(&id_pid, memory_order_acquire) == pid;
    uint64_t known_token = known ? atomic_load_explicit(&id_token, memory_order_relaxed) : 0;
    const size_t dlen = (size_t)(base - stem); /* the folder and its '/', before each name in path */
    char name[256 + 64];
    int rc = -1;
    f[0].err = EEXIST;
    for (int attempt = 0; attempt < 16; attempt++) {
        uint64_t token = attempt == 0 ? known_token : random_token(attempt);
        /* Our own id was checked when it was chosen; any other must be
         * free for every report kind, so that one id names one process. */
        if (!(attempt == 0 && known) && id_taken(dirfd, base, pid, token, name, sizeof name)) {
            memcpy(f[0].path, stem, dlen); /* the last name tried, for the caller's line */
            make_name(f[0].path + dlen, sizeof f[0].path - dlen, base, pid, token, f[0].ext);
            continue;
        }
        int retry = 0, fatal = 0;
        for (int i = 0; i < n && !retry && !fatal; i++) {
            make_name(name, sizeof name, base, pid, token, f[i].ext);
            memcpy(f[i].path, stem, dlen);
            make_name(f[i].path + dlen, sizeof f[i].path - dlen, base, pid, token, f[i].ext);
            f[i].fd = open_new(dirfd, name, flags, mode);
            if (f[i].fd >= 0)
                continue;
            f[i].err = errno;
            if (f[i].err == EEXIST)
                retry = 1;
            else if (i == 0)
                fatal = 1;
        }
        if (fatal) {
            close(dirfd);
            return -1;
        }
        if (retry) {
            for (int i = 0; i < n; i++)
                if (f[i].fd >= 0) {
                    make_name(name, sizeof name, base, pid, token, f[i].ext);
                    undo(&f[i], dirfd, name);
                }
            f[0].err = EEXIST;
            continue;
        }
        if (atomic_load_explicit(&id_pid, memory_order_relaxed) != pid) {
            atomic_store_explicit(&id_token, token, memory_order_relaxed);
            atomic_store_explicit(&id_pid, pid, memory_order_release);
        }
        f[0].err = 0;
        rc = 0;
        break;
    }
    close(dirfd);
    return rc;
}

const char *tg_proc_strerror(const struct tg_proc_file *f)
{
    return f->why[0] ? f->why : strerror(f->err);
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
            /* the file of that kind under f's own id (every file of one
             * create call has it; the process's first id may be another) */
            char instead[TG_PROC_PATH_MAX];
            size_t keep = strlen(f->path), el = strlen(f->ext);
            keep = keep >= el ? keep - el : keep;
            memcpy(instead, f->path, keep);
            struct name in = {instead, keep, sizeof instead};
            instead[keep] = '\0';
            put_str(&in, exts[i]);
            tg__warn("%s is %s, not a report file of this process: left alone; writing %s instead", plain,
                     kind_of(sb.st_mode), instead);
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

