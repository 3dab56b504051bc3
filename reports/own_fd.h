/* A descriptor tunerguard opened, kept with the identity of what it opened
 * (device and inode).  The program may close any descriptor (a daemon's
 * os.closerange(3, 256)) and get its number back for a file of its own; a
 * number is used only while it still names the same open file.
 *
 * Contract: fstat(2) (and open(2) to reopen); no allocation, no lock,
 * async-signal-safe. */
#ifndef TG_OWN_FD_H
#define TG_OWN_FD_H

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

struct tg_own_fd {
    int fd;                        /* -1: none */
    dev_t dev;
    ino_t ino;
};

/* Remember fd and what it names now; fd < 0 (or a failing fstat) sets none. */
static inline void tg_own_fd_set(struct tg_own_fd *o, int fd)
{
    struct stat st;
    o->fd = -1;
    if (fd >= 0 && fstat(fd, &st) == 0) {
        o->fd = fd;
        o->dev = st.st_dev;
        o->ino = st.st_ino;
    }
}

/* 1 when o->fd is open and names the file tg_own_fd_set saw, else 0. */
static inline int tg_own_fd_ok(const struct tg_own_fd *o)
{
    struct stat st;
    return o->fd >= 0 && fstat(o->fd, &st) == 0 && st.st_dev == o->dev && st.st_ino == o->ino;
}

/* o's number was lost (tg_own_fd_ok failed): open path again (flags |
 * O_NOFOLLOW|O_NOCTTY|O_NONBLOCK|O_CLOEXEC) and keep it only when it is the
 * same file as before.  Returns the new descriptor (in o), or -1 (o none).
 * The lost number is never closed: it is the program's now. */
static inline int tg_own_fd_reopen(struct tg_own_fd *o, const char *path, int flags)
{
    struct tg_own_fd was = *o;
    int fd;
    do
        fd = open(path, flags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    tg_own_fd_set(o, fd);
    if (o->fd >= 0 && o->dev == was.dev && o->ino == was.ino)
        return fd;
    if (fd >= 0)
        close(fd);
    o->fd = -1;
    return -1;
}

#endif
