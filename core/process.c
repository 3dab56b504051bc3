/* Process facts and report file creation.  See process.h. */
#include "core/process.h"
#include "core/startup.h"
#include "core/log.h"
#include "core/options.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TG_RANK_LIMIT (1L << 30)

/* The option as configured, and its full length (may exceed the copy);
 * zero (in .bss, not 4 KB of .data every process maps) until configured,
 * read as the default "tunerguard" then. */
static char cfg_path[TG_PROC_STEM_MAX + 1];
static size_t cfg_len;

/* Computed once: 0 not yet, 1 being computed, 2 ready (read-only then). */
static _Atomic int facts_state;
static int facts_rank = -1;
static int facts_to_stderr;
static char facts_stem[TG_PROC_STEM_MAX + 1];
/* Said at the first getter call after computing (arming stays silent). */
enum { SAY_NONE, SAY_RANK, SAY_LONG };
static int facts_say;
static char facts_bad_rank[48];
static atomic_flag facts_said = ATOMIC_FLAG_INIT;

/* The id of this process's report files: <pid> (token 0) or <pid>.<token>.
 * id_pid is stored last: a reader that sees its own pid sees its token. */
static _Atomic pid_t id_pid;
static _Atomic uint64_t id_token;

TG_STARTUP void tg_proc_configure(const char *log_path)
{
    if (!log_path || !log_path[0])
        log_path = "tunerguard";
    cfg_len = strlen(log_path);
    size_t n = cfg_len < TG_PROC_STEM_MAX ? cfg_len : TG_PROC_STEM_MAX;
    memcpy(cfg_path, log_path, n);
    cfg_path[n] = '\0';
    atomic_store(&facts_state, 0);
    atomic_flag_clear(&facts_said);
    facts_say = SAY_NONE;
    atomic_store(&id_pid, 0);
}

TG_STARTUP void tg_proc_setup(void)
{
    static _Atomic int setup TG_STARTUP_DATA; /* 0 not yet, 1 being set up, 2 done */
    if (atomic_load_explicit(&setup, memory_order_acquire) == 2)
        return;
    int expect = 0;
    if (atomic_compare_exchange_strong(&setup, &expect, 1)) {
        tg_proc_configure(tg_opts.log_path);
        atomic_store_explicit(&setup, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&setup, memory_order_acquire) != 2)
        sched_yield(); /* another thread is copying the option */
}

/* -1: unset or empty; -2: set but not a rank. */
TG_STARTUP static int parse_rank(const char *s)
{
    if (!s || !s[0])
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -2;
        v = v * 10 + (*p - '0');
        if (v >= TG_RANK_LIMIT)
            return -2;
    }
    return (int)v;
}

/* A printable copy of s for a diagnostic: other bytes as \xNN, cut at len. */
static void printable(char *dst, size_t len, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (; *s && o + 5 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            dst[o++] = (char)c;
        } else {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        }
    }
    if (*s && o + 3 < len)
        dst[o++] = '.', dst[o++] = '.', dst[o++] = '.';
    dst[o] = '\0';
}

/* Read at arming in every Python process: in RELRO, not .rodata
 * (TG_STARTUP_RODATA, core/startup.h). */
static const char rank_env[] TG_STARTUP_RODATA = "RANK";
static const char to_stderr[] TG_STARTUP_RODATA = "stderr";

TG_STARTUP static void compute_unlocked(void)
{
    const char *env = getenv(rank_env);
    int r = parse_rank(env);
    facts_rank = r >= 0 ? r : -1;
    facts_say = SAY_NONE;
    if (r == -2) {
        printable(facts_bad_rank, sizeof facts_bad_rank, env);
        facts_say = SAY_RANK;
    }

    facts_to_stderr = strcmp(cfg_path, to_stderr) == 0;
    int from_cfg = !facts_to_stderr && cfg_len;
    const char *base = from_cfg ? cfg_path : "tunerguard";
    size_t base_len = from_cfg ? cfg_len : strlen(base);
    char *out = facts_stem;
    size_t room = sizeof facts_stem, used = 0;
    out[0] = '\0';
    if (base[0] != '/') {
        /* Relative: the directory of now (arming), so a later chdir() of the
         * program does not move its reports.  If the directory is gone
         * (getcwd fails), the name stays relative. */
        if (getcwd(out, room - 1)) {
            used = strlen(out);
            if (used > 1)
                out[used++] = '/';
            while (base[0] == '.' && base[1] == '/') {
                base += 2;
                base_len -= 2;
            }
        } else {
            used = 0;
        }
    }
    char rank_sfx[24] = "";
    if (facts_rank >= 0) {
        char digits[12];
        int i = (int)sizeof digits, v = facts_rank;
        do
            digits[--i] = (char)('0' + v % 10);
        while ((v /= 10) > 0);
        memcpy(rank_sfx, ".rank", 5);
        memcpy(rank_sfx + 5, digits + i, sizeof digits - (size_t)i);
        rank_sfx[5 + sizeof digits - (size_t)i] = '\0';
    }
    /* log_path=DIR/ names a folder: the files are DIR/tunerguard.<id>.*,
     * not hidden DIR/.<id>.* files that a directory listing skips. */
    /* A log_path longer than its copy is not read past the copy's end (it
     * is "too long" below). */
    int whole = !from_cfg || cfg_len <= TG_PROC_STEM_MAX;
    const char *leaf = whole && base_len && base[base_len - 1] == '/' ? "tunerguard" : "";
    size_t sfx_len = strlen(rank_sfx), leaf_len = strlen(leaf);
    if (used + base_len + leaf_len + sfx_len >= room) {
        facts_stem[0] = '\0';
        facts_to_stderr = 1;
        if (facts_say == SAY_NONE)
            facts_say = SAY_LONG;
        return;
    }
    memcpy(out + used, base, base_len);
    used += base_len;
    memcpy(out + used, leaf, leaf_len);
    used += leaf_len;
    memcpy(out + used, rank_sfx, sfx_len + 1);
}

TG_STARTUP static void compute(void)
{
    if (atomic_load_explicit(&facts_state, memory_order_acquire) == 2)
        return;
    int expect = 0;
    if (!atomic_compare_exchange_strong(&facts_state, &expect, 1)) {
        /* Another thread is computing (a few syscalls): wait for it. */
        while (atomic_load_explicit(&facts_state, memory_order_acquire) != 2)
            sched_yield();
        return;
    }
    compute_unlocked();
    atomic_store_explicit(&facts_state, 2, memory_order_release);
}

/* Compute, and say once what was wrong with the input. */
TG_STARTUP static void facts(void)
{
    compute();
    if (facts_say == SAY_NONE || atomic_flag_test_and_set(&facts_said))
        return;
    if (facts_say == SAY_RANK)
        tg__warn("RANK='%s' is not a rank (digits only, 0 to %ld); report files are named without one",
                 facts_bad_rank, TG_RANK_LIMIT - 1);
    else
        tg__warn("log_path is %zu bytes long, too long for a report path (at most %d with the directory); "
                 "reports go to stderr", cfg_len, TG_PROC_STEM_MAX - 1);
}

TG_STARTUP void tg_proc_arm(void)
{
    compute();
}

int tg_proc_rank(void)
{
    facts();
    return facts_rank;
}

int tg_proc_text_to_stderr(void)
{
    facts();
    return facts_to_stderr;
}

const char *tg_proc_stem(void)
{
    facts();
    return facts_stem;
}

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
        compute(); /* not from a signal handler: callers there computed before */
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

/* ---- secure execution ------------------------------------------------------ */

TG_STARTUP int tg_proc_secure(void)
{
    return getauxval(AT_SECURE) != 0;
}

TG_STARTUP static void add_name(char *names, size_t len, int *count, const char *name)
{
    size_t used = strlen(names);
    const char *sep = *count ? ", " : "";
    if (used + strlen(sep) + strlen(name) + 1 <= len) {
        memcpy(names + used, sep, strlen(sep));
        memcpy(names + used + strlen(sep), name, strlen(name) + 1);
    }
    (*count)++;
}

TG_STARTUP int tg_proc_secure_filter(struct tg_options *o, int secure, char *names, size_t len)
{
    int count = 0;
    if (len)
        names[0] = '\0';
    if (!secure)
        return 0;
    if (strcmp(o->log_path, "stderr") != 0) {
        if (strcmp(o->log_path, "tunerguard") != 0)
            add_name(names, len, &count, "log_path");
        if (tg_options_set_string(o, &o->log_path, "stderr") < 0) {
            /* no 7 bytes in a constructor: do nothing rather than write files */
            o->mode = TG_MODE_OFF;
            return count;
        }
    }
    if (o->suppressions[0]) {
        add_name(names, len, &count, "suppressions");
        tg_options_set_string(o, &o->suppressions, ""); /* the default: no copy, cannot fail */
    }
    if (o->cupti_path[0]) {
        add_name(names, len, &count, "cupti_path");
        tg_options_set_string(o, &o->cupti_path, "");
    }
    if (o->trace) {
        add_name(names, len, &count, "trace");
        o->trace = 0;
    }
    return count;
}
