/* Run tests/unit/check_jsonl.py on a file (posix_spawn, no shell): the
 * schema check of docs/report-schema.md plus value expectations.  Returns
 * the checker's exit status (0: all good), or -1 when python3 cannot run. */
#ifndef TG_JSONL_CHECK_H
#define TG_JSONL_CHECK_H

#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>

#include "report_fixture.h"

extern char **environ;

/* argv-style expectations "LINE:PATH=JSON", NULL-terminated. */
static inline int run_jsonl_checker(const char *file, int count, const char *const *expects)
{
    char script[1200], cnt[16];
    snprintf(script, sizeof script, "%s/check_jsonl.py", fx_srcdir());
    snprintf(cnt, sizeof cnt, "%d", count);
    const char *argv[128] = {"python3", script, file, "--count", cnt};
    int argc = 5;
    for (int i = 0; expects && expects[i] && argc < 125; i++) {
        argv[argc++] = "--expect";
        argv[argc++] = expects[i];
    }
    argv[argc] = NULL;
    pid_t pid;
    if (posix_spawnp(&pid, "python3", NULL, NULL, (char *const *)argv, environ) != 0)
        return -1;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

#endif
