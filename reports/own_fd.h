/* A descriptor tunerguard opened, kept with the identity of what it opened
 * (device and inode).  The program may close any descriptor (a daemon's
 * os.closerange(3, 256)) and get its number back for a file of its own; a
 * number is used only while it still names the same open file.
 *
 * Contract: fstat(2) only; no allocation, no lock, async-signal-safe. */
#ifndef TG_OWN_FD_H
#define TG_OWN_FD_H

#include <sys/stat.h>

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

#endif
