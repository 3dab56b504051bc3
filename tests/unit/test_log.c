/* core/log.c: what tunerguard writes to fd 2, and where it refuses to. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void tick(int sig)
{
    (void)sig;
}

/* fd 2 a pipe, full, whose reader never reads: the write gives up after
 * its second, also while a timer interrupts the wait ten times a second. */
Test(log, full_pipe_write_gives_up_despite_signals)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    while (write(p[1], buf, sizeof buf) > 0) {
    }
    fcntl(p[1], F_SETFL, 0);
    dup2(p[1], 2);
    tg_log_note_start();
    struct sigaction sa = {0};
    sa.sa_handler = tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 100000}, {0, 100000}};
    setitimer(ITIMER_REAL, &it, NULL);
    double t0 = now_s();
    int rc = tg_log_write_stderr("line\n", 5);
    double took = now_s() - t0;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    cr_assert_eq(rc, -1);
    cr_assert(took >= 0.9 && took < 3.0, "gave up after %.2f s", took);
}

/* fd 2 closed after start and a data file opened on the number: refused;
 * the same file opened for appending (a log): taken. */
Test(log, program_file_on_fd2_refused_append_log_taken)
{
    char path[] = "/tmp/tg_log_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    tg_log_note_start(); /* the stderr the process started with */
    dup2(fd, 2);
    cr_assert_eq(tg_log_stderr_ok(), 0, "a file written from its start is the program's");
    int app = open(path, O_WRONLY | O_APPEND);
    dup2(app, 2);
    cr_assert_eq(tg_log_stderr_ok(), 1, "a log opened for appending is a stderr");
    unlink(path);
    dup2(fd, 2);
    cr_assert_eq(tg_log_stderr_ok(), 1, "an unlinked file is a capture (pytest's)");
    close(fd);
    close(app);
}
