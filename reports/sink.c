/* The report sink: where reports go.
 *
 * Files are created on the first report only, both new, with one id:
 * <stem>.<id>.txt and <stem>.<id>.jsonl, the stem and the id from
 * core/process.h (<log_path>[.rank<R>] made absolute; <pid>, or <pid>.<n>
 * when that name is taken).  log_path "stderr": text on fd 2, no JSON.
 * When a file cannot be created, or a write to it fails (disk full, I/O
 * error), one tg__warn line names it and from then on the text goes to
 * stderr; the failed report is written again there in full, so nothing is
 * lost.  A record is in a file whole or not at all: a write that failed part
 * way is cut back off (ftruncate of our own file).  JSON Lines have no stderr fallback (the text carries the same facts).
 *
 * Contract: tg_sink_emit takes a mutex, opens files and symbolizes: call it
 * with the GIL held or not, but never from a signal handler.  Every report is
 * written with write(2) the moment it is emitted (no user-space buffering
 * survives the call), so a crash right after loses nothing.  After fork, the
 * child opens its own files (tg_sink_atfork_child, or detected by pid).
 *
 * The program may close the report descriptors (os.closerange) and reuse
 * their numbers: before each report both are checked to still name the files
 * created (reports/own_fd.h); one that does not is opened again by its path
 * (O_NOFOLLOW, and the same device and inode, else the fallback above) and
 * the old number, the program's now, is never written nor closed. */
#include "reports/report.h"
#include "reports/own_fd.h"
#include "reports/writer.h"
#include "core/log.h"
#include "core/process.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t tg__sink_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    pid_t pid;                     /* process that opened the files; 0: none */
    int txt_fd, jsonl_fd;          /* -1: not open; jsonl_fd -2: off after a failure (said once) */
    int text_to_stderr;            /* log_path=stderr, or fell back to it */
    int moved_off;                 /* log_path=stderr moved to files (fd 2 the program's) */
} tg__sink = {0, -1, -1, 0, 0};
/* What txt_fd and jsonl_fd were opened on (own_fd.h). */
static struct tg_own_fd tg__sink_ids[2] = {{-1, 0, 0}, {-1, 0, 0}};
/* Their paths, apart: zero-initialised (.bss), so the 8 KB are not .data
 * that every process the preload enters maps. */
static struct {
    char txt[TG_PROC_PATH_MAX];
    char jsonl[TG_PROC_PATH_MAX];
} tg__sink_paths;
/* The copy symbolized and written; static because a report is ~50 KB. */
static struct tg_report tg__sink_copy;
/* Under the lock: static because each holds a path of 4 KB. */
static struct tg_proc_file tg__sink_files[2];

static void reset_unlocked(void)
{
    tg__sink.pid = 0;
    tg__sink.txt_fd = tg__sink.jsonl_fd = -1;
    tg__sink_ids[0].fd = tg__sink_ids[1].fd = -1;
    tg__sink.text_to_stderr = 0;
    tg__sink.moved_off = 0;
    tg__sink_paths.txt[0] = tg__sink_paths.jsonl[0] = '\0';
}

void tg_sink_atfork_child(void)
{
    /* The parent's lock state is meaningless here: re-initialise it. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    tg__sink_lock = fresh;
    if (tg__sink.pid) {
        if (tg__sink.txt_fd >= 0 && tg_own_fd_ok(&tg__sink_ids[0]))
            close(tg__sink.txt_fd);
        if (tg__sink.jsonl_fd >= 0 && tg_own_fd_ok(&tg__sink_ids[1]))
            close(tg__sink.jsonl_fd);
    }
    reset_unlocked();
}

static void fall_back_unlocked(const char *path, const char *why)
{
    tg__warn("cannot write report file %s (%s); reports go to stderr instead", path, why);
    if (tg__sink.txt_fd >= 0)
        close(tg__sink.txt_fd);
    tg__sink.txt_fd = -1;
    tg__sink.text_to_stderr = 1;
}

/* Create both report files (<stem>.<id>.txt, .jsonl) and take them as the
 * sink's: 0, or -1 with tg__sink_files[0] saying why. */
static int create_files_unlocked(void)
{
    struct tg_proc_file *f = tg__sink_files;
    f[0].ext = ".txt";
    f[1].ext = ".jsonl";
    /* Read access too, so the fatal-signal handler can see whether a report
     * line was cut (reports/fatal.c).  The files are new: ours to read. */
    int rc = tg_proc_create(f, 2, O_RDWR | O_APPEND);
    snprintf(tg__sink_paths.txt, sizeof tg__sink_paths.txt, "%s", f[0].path);
    snprintf(tg__sink_paths.jsonl, sizeof tg__sink_paths.jsonl, "%s", f[1].path);
    if (rc < 0)
        return -1;
    tg__sink.txt_fd = f[0].fd;
    tg__sink.jsonl_fd = f[1].fd < 0 ? -2 : f[1].fd;
    tg_own_fd_set(&tg__sink_ids[0], tg__sink.txt_fd);
    tg_own_fd_set(&tg__sink_ids[1], f[1].fd);
    tg_proc_note_taken(&f[0]);
    return 0;
}

/* One line first in the text file, before its reports. */
static void first_line_unlocked(const char *line)
{
    struct tg_w w;
    tg_w_init(&w, tg__sink.txt_fd);
    tg_w_str(&w, line);
    tg_w_flush(&w);
}

static void open_unlocked(void)
{
    pid_t pid = getpid();
    if (tg__sink.pid == pid)
        return;
    if (tg__sink.pid)              /* forked without tg_sink_atfork_child */
        tg_sink_atfork_child();
    tg__sink.pid = pid;
    if (tg_proc_text_to_stderr()) {
        tg__sink.text_to_stderr = 1;
        return;
    }
    if (create_files_unlocked() < 0) {
        struct tg_proc_file *f = tg__sink_files;
        fall_back_unlocked(f[0].path[0] ? f[0].path : tg_proc_stem(), tg_proc_strerror(&f[0]));
        return;                    /* same directory: no JSON either */
    }
    if (tg_log_stderr_moved())
        first_line_unlocked("tunerguard: log_path=stderr, but stderr was closed when the process "
                            "started: the reports are in this file\n");
    if (tg__sink.jsonl_fd < 0)
        tg__warn("cannot write report file %s (%s); JSON Lines reports are off",
                 tg__sink_paths.jsonl, tg_proc_strerror(&tg__sink_files[1]));
}

/* log_path=stderr, and fd 2 is no longer one tunerguard may write to (a
 * file the program opened in stderr's place: core/log.h): the reports go to
 * the default files from here on, the text file's first line says why.
 * Tried once per process; a failure leaves the reports unwritten. */
static void move_off_stderr_unlocked(void)
{
    if (tg__sink.moved_off)
        return;
    tg__sink.moved_off = 1;
    if (create_files_unlocked() < 0)
        return;
    tg__sink.text_to_stderr = 0;
    first_line_unlocked("tunerguard: log_path=stderr, but fd 2 became a file the program opened in stderr's "
                        "place: the reports from here on are in this file\n");
}

/* *fd (a report file, id its identity) still ours, or opened again by path
 * and found to be the same file.  Returns 0, or -1 with *fd = -1 (the old
 * number left alone: it is the program's). */
static int still_ours_unlocked(int *fd, struct tg_own_fd *id, const char *path)
{
    if (tg_own_fd_ok(id))
        return 0;
    *fd = tg_own_fd_reopen(id, path, O_RDWR | O_APPEND);
    return *fd < 0 ? -1 : 0;
}

/* Both report files checked (still_ours_unlocked); a lost one is said once. */
static void check_files_unlocked(void)
{
    if (tg__sink.txt_fd >= 0 && still_ours_unlocked(&tg__sink.txt_fd, &tg__sink_ids[0], tg__sink_paths.txt) < 0)
        fall_back_unlocked(tg__sink_paths.txt, "closed by the program, and no longer there");
    if (tg__sink.jsonl_fd >= 0 &&
        still_ours_unlocked(&tg__sink.jsonl_fd, &tg__sink_ids[1], tg__sink_paths.jsonl) < 0) {
        tg__warn("cannot write report file %s (closed by the program, and no longer there); "
                 "JSON Lines reports are off", tg__sink_paths.jsonl);
        tg__sink.jsonl_fd = -2;
    }
}

/* One record into a report file of ours (O_APPEND, only written under the
 * lock): whole or not at all.  When a write fails part way (a full disk,
 * EFBIG), the file is cut back to where the record began, so no cut-short
 * record is left.  Returns write's result, errno that of the failed write. */
static int write_whole_unlocked(int fd, const struct tg_report *c, int (*write_one)(int, const struct tg_report *))
{
    off_t start = lseek(fd, 0, SEEK_END);
    errno = 0;
    if (write_one(fd, c) == 0)
        return 0;
    int err = errno;
    if (start >= 0 && ftruncate(fd, start) != 0) {
        /* nothing more to do: the line that follows says the file failed */
    }
    errno = err;
    return -1;
}

int tg_sink_emit(const struct tg_report *r)
{
    int rc = 0;
    pthread_mutex_lock(&tg__sink_lock);
    open_unlocked();
    check_files_unlocked();
    if (tg__sink.text_to_stderr && !tg_log_stderr_ok())
        move_off_stderr_unlocked();
    struct tg_report *c = &tg__sink_copy;
    memcpy(c, r, sizeof *c);
    tg_report_symbolize(c);

    if (!tg__sink.text_to_stderr && write_whole_unlocked(tg__sink.txt_fd, c, tg_report_write_text) < 0)
        fall_back_unlocked(tg__sink_paths.txt, errno ? strerror(errno) : "write failed");
    if (tg__sink.text_to_stderr && (!tg_log_stderr_ok() || tg_report_write_text(2, c) < 0))
        rc = -1;                   /* stderr closed at start: fd 2 is the program's */
    if (tg__sink.jsonl_fd >= 0 && write_whole_unlocked(tg__sink.jsonl_fd, c, tg_report_write_jsonl) < 0) {
        tg__warn("cannot write report file %s (%s); JSON Lines reports are off",
                 tg__sink_paths.jsonl, errno ? strerror(errno) : "write failed");
        close(tg__sink.jsonl_fd);
        tg__sink.jsonl_fd = -2;
    }
    pthread_mutex_unlock(&tg__sink_lock);
    return rc;
}

const char *tg_sink_text_path(void)
{
    /* Read without the lock: set once per process before any report is
     * counted, and callers only read it at exit. */
    if (tg__sink.text_to_stderr)
        return "stderr";
    return tg__sink.pid == getpid() ? tg__sink_paths.txt : "";
}

void tg_sink_signal_fds(int *txt_fd, int *jsonl_fd)
{
    int mine = tg__sink.pid == getpid();    /* getpid(2) is signal-safe */
    *txt_fd = !mine ? -1 : !tg__sink.text_to_stderr ? tg__sink.txt_fd : tg_log_stderr_ok() ? 2 : -1;
    *jsonl_fd = mine ? tg__sink.jsonl_fd : -1;
    /* A number the program took over: none (the caller creates a file). */
    if (*txt_fd >= 0 && !tg__sink.text_to_stderr && !tg_own_fd_ok(&tg__sink_ids[0]))
        *txt_fd = -1;
    if (*jsonl_fd >= 0 && !tg_own_fd_ok(&tg__sink_ids[1]))
        *jsonl_fd = -1;
}

