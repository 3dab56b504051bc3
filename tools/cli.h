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
/* tunerguard report: added to its status (1 found, 0 not) when some input
 * could not be read in full; each such file is named on stderr. */
#define CLI_EXIT_INCOMPLETE 4

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

/* The value of the string option NAME (log_path, suppressions, targets,
 * cupti_path) in an options string, parsed by the library's own parser
 * (core/options.c): the last NAME= wins, quotes removed, the default when it
 * is absent; "" when the library would refuse the string. */
void cli_option_value(const char *opts, const char *name, char *out, size_t n);

/* ---- error lines (cli_common.c) ------------------------------------------ */

/* One line on stderr: "tunerguard: " + the formatted text with every byte
 * that is not printable (controls, DEL, bytes that are not UTF-8) written as
 * \xNN and '\\' doubled, so a file name cannot drive the terminal. */
void cli_errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
/* Append N bytes of S escaped as cli_errf does. */
void cli_buf_put_esc(struct cli_buf *b, const char *s, size_t n);
/* Read a whole file; NULL on error.  *len gets the size. */
char *cli_read_file(const char *path, size_t *len);
/* Read all of the open descriptor FD into B (NUL-terminated); 0, or -1 with
 * errno set. */
int cli_read_fd(int fd, struct cli_buf *b);

/* ---- Chrome trace merge (cli_trace.c) ------------------------------------- */

struct cli_trace {
    struct cli_buf out;
    size_t events, files;
};
/* Add the events of one trace file (TEXT, LEN bytes) shown as PATH.  Returns
 * 0 when read in full, 1 when cut short (its complete events kept), -1 when
 * it is not a trace; both named on stderr. */
int cli_trace_add(struct cli_trace *t, const char *path, const char *text, size_t len);
/* Write the merged file to OUT; 0, or -1 (named on stderr).  Frees T. */
int cli_trace_write(struct cli_trace *t, const char *out);
/* mkdir -p; 0 on success. */
int cli_mkdirs(const char *path);

#endif
