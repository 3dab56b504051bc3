/* The fatal-signal handler (reports/fatal.h): installing it, and on a
 * fatal signal, once per process, writing the report (its content is
 * reports/fatal_report.c) to the text and JSON Lines report files, then
 * chaining to the previous action.  Threads that crash meanwhile wait for
 * the report, a bounded while, before they chain.
 *
 * Everything reachable from the handler is async-signal-safe and
 * allocates nothing: write(2), open(2), read(2), pread(2), lseek(2),
 * ftruncate(2), close(2), nanosleep(2), gettid, sigaction(2), raise(3),
 * the tg_w writer, the report files' creation (core/process.h,
 * tg_proc_create), and what fatal_report.c lists.  tg_fatal_install is not
 * signal-safe (dlsym, the process facts). */
#include "reports/fatal.h"
#include "reports/fatal_internal.h"
#include "reports/report.h"
#include "reports/trace.h"
#include "reports/writer.h"
#include "core/log.h"
#include "core/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const int tg__fatal_sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
#define TG__NSIG (int)(sizeof tg__fatal_sigs / sizeof tg__fatal_sigs[0])
static struct sigaction tg__old[TG__NSIG];
static _Atomic int tg__installed;
static atomic_flag tg__in_handler = ATOMIC_FLAG_INIT;
static int tg__to_stderr;       /* text reports go to stderr (log_path=stderr, ...) */
static long tg__rank = -1;      /* tg_proc_rank(), -1: none */
static struct tg_proc_file tg__file; /* the handler's file (it runs once) */

/* The descriptor of the text report (ext ".txt") or the JSON Lines report
 * (".jsonl"), creating <stem>.<id><ext> (core/process.h: a new file, the id
 * of this process's other report files) if no report was written yet.
 * *opened = 1 when this function opened it.  -1: none (no JSON Lines with
 * log_path=stderr, or the file cannot be created). */
static int report_fd(int *opened, const char *ext)
{
    int txt, jsonl;
    int is_txt = strcmp(ext, ".txt") == 0;
    *opened = 0;
    tg_sink_signal_fds(&txt, &jsonl);
    if (is_txt && txt >= 0)
        return txt;
    if (!is_txt && jsonl >= 0)
        return jsonl;
    if (!is_txt && jsonl == -2)
        return -1; /* JSON Lines turned off after a failed write (a full disk): no new file now */
    if (tg__to_stderr)
        return is_txt && tg_log_stderr_ok() ? 2 : -1;
    tg__file.ext = ext;
    if (tg_proc_create(&tg__file, 1, O_RDWR | O_APPEND) < 0)
        return -1;
    *opened = 1;
    if (is_txt && tg_log_stderr_ok()) {
        struct tg_w note;
        tg_w_init(&note, 2);
        tg_w_str(&note, "tunerguard: fatal signal; report in ");
        tg_w_str(&note, tg__file.path);
        tg_w_char(&note, '\n');
        tg_w_flush(&note);
    }
    return tg__file.fd;
}

/* A record that a write could not take whole (a full disk): the file cut
 * back to where it began (start, from lseek), errno kept.  ftruncate(2) is
 * async-signal-safe.  Returns 1. */
static int cut_back(int fd, off_t start)
{
    int saved = errno;
    if (start >= 0 && ftruncate(fd, start) != 0) {
        /* nothing more to do */
    }
    errno = saved;
    return 1;
}

/* The thread writing the report (tg__in_handler's winner), and whether it
 * is done.  Threads that crash at the same time (several workers hitting
 * the same bad pointer) wait for it, a bounded while, before they chain:
 * the first of them to chain would otherwise kill the process in the
 * middle of the winner's capture, and the report was lost. */
static atomic_int tg__handler_tid;
static atomic_int tg__handler_done;
#define TG__WAIT_FOR_REPORT_MS 5000

static void handler(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    int saved = errno;
    int idx = 0;
    while (idx < TG__NSIG && tg__fatal_sigs[idx] != sig)
        idx++;
    const int me = (int)syscall(SYS_gettid);
    if (atomic_flag_test_and_set(&tg__in_handler)) {
        if (atomic_load(&tg__handler_tid) != me) { /* not a fault inside our own report: wait for it */
            const struct timespec tick = {0, 10 * 1000 * 1000};
            for (int ms = 0; ms < TG__WAIT_FOR_REPORT_MS && !atomic_load(&tg__handler_done); ms += 10)
                nanosleep(&tick, NULL); /* async-signal-safe */
        }
    } else {
        atomic_store(&tg__handler_tid, me);
        tg__fatal_capture(sig, info);
        int opened;
        int fd = report_fd(&opened, ".txt");
        int err_ok = tg_log_stderr_ok(); /* fd 2 closed at start: the program's */
        off_t start = fd > 2 ? lseek(fd, 0, SEEK_END) : -1;
        if ((fd >= 0 || err_ok) && tg__fatal_write_text(fd >= 0 ? fd : 2) < 0 && fd > 2 && cut_back(fd, start) &&
            err_ok) {
            /* The file did not take it all (a full disk): the whole block on
             * stderr too, after one line that says why. */
            static const char why[] = "tunerguard: the fatal report could not be written in full to its file "
                                      "(a write failed); it follows here\n";
            if (tg_log_write_stderr(why, sizeof why - 1) == 0)
                tg__fatal_write_text(2);
        }
        if (opened)
            close(fd);
        fd = report_fd(&opened, ".jsonl"); /* none with log_path=stderr, as for reports */
        if (fd >= 0) {
            /* A report line cut by this signal (lines over the writer's
             * buffer go out in pieces): end it, so the record stands on a
             * line of its own. */
            char last;
            off_t end = lseek(fd, 0, SEEK_END);
            if (end > 0 && pread(fd, &last, 1, end - 1) == 1 && last != '\n' && write(fd, "\n", 1) < 0) {
                /* nothing to do: the record follows anyway */
            }
            end = lseek(fd, 0, SEEK_END);
            if (tg__fatal_write_jsonl(fd, tg__rank) < 0)
                cut_back(fd, end); /* a record cut short by a full disk: none */
        }
        if (opened)
            close(fd);
        tg_trace_signal_flush();
        atomic_store(&tg__handler_done, 1);
    }
    /* Chain: put the previous action back and let the signal arrive again. */
    if (idx < TG__NSIG)
        sigaction(sig, &tg__old[idx], NULL);
    else
        signal(sig, SIG_DFL);
    if (!info || info->si_code <= 0 || sig == SIGABRT)
        raise(sig);  /* sent (kill, raise, abort): blocked now, delivered on return */
    /* a hardware fault re-executes the faulting instruction on return */
    errno = saved;
}

int tg_fatal_install(int require_python)
{
    if (atomic_load(&tg__installed))
        return 0;
    if (tg__fatal_resolve_python(require_python) < 0)
        return -1;
    if (atomic_exchange(&tg__installed, 1))
        return 0;
    /* The facts now, outside the handler: there they are only read. */
    tg__rank = tg_proc_rank();
    tg__to_stderr = tg_proc_text_to_stderr();
    (void)tg_proc_stem();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* the alternate stack if the thread has one */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < TG__NSIG; i++)
        sigaction(tg__fatal_sigs[i], &sa, &tg__old[i]);
    return 1;
}
