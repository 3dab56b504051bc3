/* run_once CMD [ARG...]: fork, exec CMD, wait; prints "<ms> <max RSS KiB>
 * <cpu ms>" of the child (wall time from fork to reaped, ru_maxrss, and user +
 * system time from wait4: less disturbed than wall time on a loaded machine).  Built
 * static (bench/startup.py does it) so that its own few hundred KiB, which
 * ru_maxrss counts with the child's (the pages before exec count too), stay
 * below what any dynamically linked child maps, and so that an LD_PRELOAD in
 * its environment is the child's only: TG_CHILD_PRELOAD becomes the child's
 * LD_PRELOAD. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: run_once CMD [ARG...]\n");
        return 2;
    }
    const char *pre = getenv("TG_CHILD_PRELOAD");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        if (pre && pre[0])
            setenv("LD_PRELOAD", pre, 1);
        unsetenv("TG_CHILD_PRELOAD");
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        execv(argv[1], argv + 1);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
        return 2;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "run_once: %s exited with status %d\n", argv[1], status);
        return 1;
    }
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    printf("%.4f %ld %.3f\n", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
           ru.ru_maxrss, cpu);
    return 0;
}
