/* Reading folders that anyone may have written into, for tunerguard report.
 *
 * Contract: the walk never follows a symbolic link below the folder it was
 * given, visits each folder (dev, inode) once, goes to any depth while
 * holding at most two descriptors (it climbs back through ".." and checks
 * the folder it lands in is the one it left), and reads no file itself: it
 * hands every entry that is not a folder to a callback, with the folder's
 * descriptor and the entry's lstat.  Entries of a folder come in strcmp
 * order, a sub-folder's entries at its place among them.  Problems (a folder
 * that cannot be opened or listed, an entry that cannot be examined, a folder
 * moved during the walk) are one line each on stderr through cli_errf and
 * counted in cli_walk's return value. */
#ifndef TG_CLI_WALK_H
#define TG_CLI_WALK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* A set of pairs of 64-bit numbers: (dev, inode), (pid, rank).  Grows. */
struct cli_pairset {
    uint64_t (*slot)[2];
    unsigned char *used;
    size_t n, cap;
};
/* 1 when (A, B) was not in the set (it is now), 0 when it was. */
int cli_pairset_add(struct cli_pairset *s, uint64_t a, uint64_t b);
int cli_pairset_has(const struct cli_pairset *s, uint64_t a, uint64_t b);
void cli_pairset_free(struct cli_pairset *s);

/* DFD: the folder's descriptor (valid during the call only); NAME: the
 * entry's name in it; PATH: the path to show (TOP/.../NAME); ST: its lstat. */
typedef void (*cli_walk_fn)(void *ctx, int dfd, const char *name, const char *path, const struct stat *st);

/* Walk the folder TOP (a symbolic link at TOP itself is followed: the user
 * named it).  Folders already in SEEN are skipped; every folder visited is
 * added.  Returns the number of problems named on stderr (0: all read). */
size_t cli_walk(const char *top, struct cli_pairset *seen, cli_walk_fn fn, void *ctx);

#endif
