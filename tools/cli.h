/* tunerguard command-line front end: declarations shared by the subcommands.
 *
 * Each subcommand lives in its own file (cli_run.c, cli_report.c, cli_repro.c,
 * cli_doctor.c) and exposes one entry point `int cli_NAME(int argc, char **argv)`
 * where argv[0] is the subcommand name; the return value is the process exit
 * status.  Help text lives in one table (tunerguard.c) so that --help, `help`
 * and the roff man page (--man) are generated from the same words. */
#ifndef TG_CLI_H
#define TG_CLI_H

#include <stddef.h>
#include <sys/types.h>

#define CLI_EXIT_USAGE 2

/* Subcommand entry points. */
int cli_run(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_repro(int argc, char **argv);
int cli_doctor(int argc, char **argv);

/* Print the usage line of SUB ("run", ...) on stderr followed by a pointer
 * to --help; returns CLI_EXIT_USAGE so callers can `return cli_usage(...)`. */
int cli_usage(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print the full help of SUB on stdout; returns 0. */
int cli_help(const char *sub);
/* True when ARG is -h or --help. */
int cli_is_help(const char *arg);

/* ---- locations (cli_common.c) ------------------------------------------- */

/* Directory holding the running executable (from /proc/self/exe), without a
 * trailing slash.  Never NULL (falls back to "."). */
const char *cli_self_dir(void);
/* Find libtunerguard.so: $TUNERGUARD_LIB if set, else next to the binary
 * (build tree), else ../lib, ../lib/x86_64-linux-gnu, ../lib64 and
 * ../<CMAKE_INSTALL_LIBDIR> relative to it (installed tree).  Writes an
 * absolute path to OUT and returns 0, or returns -1 and writes the places
 * looked at to OUT (for the error message). */
int cli_find_lib(char *out, size_t n);
/* The source tree's root (for tests/repro and tests/gpu): $TUNERGUARD_SOURCE_DIR,
 * else the directory compiled in by CMake.  NULL when it does not exist. */
const char *cli_source_dir(void);
/* Directory holding the stand-in libcuda.so.1 (build/tests/fakecuda), or NULL. */
const char *cli_fakecuda_dir(void);

/* ---- TUNERGUARD_OPTIONS (cli_common.c) ---------------------------------- */

/* The value of the last NAME= pair in an options string, split as the
 * library splits it (quoted values unquoted); "" when there is none. */
void cli_option_value(const char *opts, const char *name, char *out, size_t n);

/* ---- processes (cli_common.c) ------------------------------------------- */

/* Environment edit applied in the child between fork and exec:
 * value != NULL sets NAME=value, value == NULL unsets NAME. */
struct cli_env {
    const char *name;
    const char *value;
};

/* Output of a captured child.  out/err are NUL-terminated heap strings
 * (possibly empty, never NULL after a successful call); free with
 * cli_capture_free.  status is a wait(2) status; timed_out is set when the
 * child (and its process group) was killed after the timeout. */
struct cli_capture {
    char *out;
    char *err;
    int status;
    int timed_out;
    double seconds;
};

/* Run ARGV (PATH lookup) with ENV edits (NENV entries) in directory CWD
 * (NULL: unchanged), stdin from /dev/null, capturing stdout and stderr.
 * timeout_s <= 0: no limit.  Returns 0 when the child ran (even if exec
 * failed: status 127), -1 when it could not be started. */
int cli_capture_run(char *const argv[], const struct cli_env *env, size_t nenv, const char *cwd, double timeout_s,
                    struct cli_capture *cap);
void cli_capture_free(struct cli_capture *cap);

/* Exit status a shell would report for wait(2) status ST: the exit code, or
 * 128+N for a signal. */
int cli_exit_status(int st);

/* Growable string buffer. */
struct cli_buf {
    char *s;
    size_t len, cap;
};
void cli_buf_add(struct cli_buf *b, const char *s, size_t n);
void cli_buf_puts(struct cli_buf *b, const char *s);
void cli_buf_printf(struct cli_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_buf_free(struct cli_buf *b);
/* Read a whole file; NULL on error.  *len gets the size. */
char *cli_read_file(const char *path, size_t *len);
/* mkdir -p; 0 on success. */
int cli_mkdirs(const char *path);

#endif
