/* Process facts, worked out once: the rank ($RANK), where report files go
 * (the stem every writer names its files from: text, JSON Lines, trace, the
 * fatal-signal fallback), and the creation of those files.
 *
 * Life cycle: tg_proc_configure() copies the log_path option (constructor:
 * no syscall, nothing observable).  The facts are computed on the first call
 * of tg_proc_arm() (Python arming) or of any getter, whichever comes first:
 * $RANK is read, a relative log_path is resolved against the directory of
 * that moment, so a later chdir() does not scatter the reports.  A fork child
 * keeps the facts (same rank, same directory); the file id below is per pid.
 *
 * Report file names: <stem>.<id><ext>, stem = <log_path>[.rank<R>] made
 * absolute (a log_path ending in '/' names a folder: <log_path>tunerguard), id = <pid> when no report file of any kind carries that name yet
 * (the common case: tunerguard.4242.txt), else <pid>.<n> with n a random
 * decimal (a file left by an earlier run, another process with the same pid
 * in another pid namespace, a planted symlink).  Files are always created
 * new (O_CREAT|O_EXCL|O_NOFOLLOW): never appended to, never truncated, never
 * something that is not a regular file. */
#ifndef TG_PROCESS_H
#define TG_PROCESS_H

#include <stddef.h>
#include <sys/types.h>

/* Room for a stem, and for a full report path (stem + id + extension). */
#define TG_PROC_STEM_MAX 4000
#define TG_PROC_PATH_MAX (TG_PROC_STEM_MAX + 64)

/* Copy the log_path option ("" or NULL: "tunerguard"; "stderr": text on
 * stderr, no JSON Lines) and forget facts computed before (unit tests
 * reconfigure).  Call before any thread uses the facts. */
void tg_proc_configure(const char *log_path);

/* Compute the facts now, if not done yet (arming: the directory of this
 * moment is the one relative paths are resolved against).  May write one
 * warning line (a $RANK that is not a rank, a log_path too long).  Not
 * signal-safe; thread-safe. */
void tg_proc_arm(void);

/* tg_proc_configure(tg_opts.log_path), once per process, whoever comes
 * first: arming (before tg_proc_arm) or the core's activation.  Any thread
 * (a second caller waits for the first: a copy). */
void tg_proc_setup(void);

/* The rank: $RANK when it is a decimal number 0 <= R < 2^30 written with
 * digits only, else -1 ("3x", "-1", " 3", "" are no rank: the one rule every
 * writer and every report field follows).  Computes the facts on first call. */
int tg_proc_rank(void);

/* 1 when text reports go to stderr (log_path=stderr, secure execution, a
 * log_path that cannot be a path).  Computes the facts on first call. */
int tg_proc_text_to_stderr(void);

/* The absolute file stem "<dir>/<log_path>[.rank<R>]" ("tunerguard" when
 * log_path is stderr, for the trace), or "" when no file can be written.
 * Computes the facts on first call; async-signal-safe after one call (of
 * any getter) outside a signal handler. */
const char *tg_proc_stem(void);

/* One file to create: ext in, the rest out. */
struct tg_proc_file {
    const char *ext;                   /* ".txt", ".jsonl", ".trace.json" */
    int fd;                            /* -1: not created */
    int err;                           /* errno when not created */
    char path[TG_PROC_PATH_MAX];       /* the name created, or the last tried */
    char why[192];                     /* "" or, when not created for a reason of
                                          ours, that reason (tg_proc_strerror) */
};

/* Create f[0..n-1] as new regular files <stem>.<id><ext>, all with the same
 * id, opened with flags | O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0644, or
 * 0600 when the directory is writable by others (a 1777 /tmp, or any folder
 * writable by its group: the group may have other members).  The folder
 * is reached one component at a time: a symbolic link on the way is
 * followed only where nobody else could have put it, that is, unless it
 * lies in a folder others may write and belongs neither to this user nor to
 * that folder's owner (Linux's fs.protected_symlinks rule, whatever that
 * setting is, and stricter: any folder others may write, sticky or not,
 * group-writable included);
 * such a link fails the call, f[0].why says so.  The id is
 * this process's id (see above), chosen by the first call in a process and
 * tried first by later ones.  f[0] is required: returns 0 when it was
 * created (another f[i] may have failed: fd -1, err set), -1 when not (f[0]
 * .err, .path say why and where; nothing is left created).
 * Async-signal-safe once tg_proc_stem() has been computed (openat,
 * fstatat, readlinkat, unlinkat, close, getrandom; no allocation, no lock). */
int tg_proc_create(struct tg_proc_file *f, int n, int flags);

/* Why f was not created, in words: f->why, else strerror(f->err).  Not
 * async-signal-safe (strerror). */
const char *tg_proc_strerror(const struct tg_proc_file *f);

/* After a successful tg_proc_create, outside a signal handler: when f did
 * not get the common name because something that is not a regular file was
 * there (a planted symlink, a FIFO), say so in one line, once per process.
 * A regular file left there (an earlier run, another pid namespace) is
 * normal: silent. */
void tg_proc_note_taken(const struct tg_proc_file *f);

/* Open a file the library reads (suppressions, symbol tables) for reading:
 * O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_NOCTTY (a FIFO or a terminal never blocks
 * the process nor becomes its terminal), then fstat: regular files only.
 * Returns the descriptor (still O_NONBLOCK: harmless for a regular file);
 * -1 with errno when open or fstat failed; -2 when it is not a regular file,
 * with *kind saying what it is ("a FIFO", "a directory", ...).  Allocates
 * nothing, async-signal-safe. */
int tg_proc_open_read(const char *path, const char **kind);

/* The decision for secure execution (AT_SECURE: a setuid or setgid
 * program), as glibc ignores LD_PRELOAD paths there: when secure != 0, the
 * paths that come from the environment (log_path, suppressions, cupti_path)
 * are dropped and trace=1 is turned off, so reports go to stderr.  Writes
 * the names of the options that were set and are now ignored into names
 * ("" if none) and returns how many.  Pure apart from the options' own
 * storage (allocates "stderr"). */
struct tg_options;
int tg_proc_secure_filter(struct tg_options *o, int secure, char *names, size_t len);

/* getauxval(AT_SECURE) != 0 */
int tg_proc_secure(void);

#endif
