/* tunerguard: the command-line front end (dispatch and help).
 *
 *   tunerguard run|repro|report|doctor ...      the subcommands (cli_*.c)
 *   tunerguard help [SUBCOMMAND] | --help        help text, from the table below
 *   tunerguard --man                             the same text as a roff man page
 *   tunerguard --version                         version and build id
 *   tunerguard --lib                             the path of the libtunerguard.so `run` preloads
 *
 * Contract: the help a user reads (--help, `help SUB`, the man page generated
 * from --man at build time) comes from one table, so they cannot drift.  Exit
 * status 2 for usage errors, everywhere. */
#include "cli.h"
#include "tg_build_id.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef TG_VERSION
#define TG_VERSION "0.1"
#endif

struct cli_opt {
    const char *term;
    const char *desc;
};

struct cli_cmd {
    const char *name;
    const char *synopsis; /* after "tunerguard " */
    const char *summary;  /* one line */
    const char *description;
    struct cli_opt opts[16];
    const char *exit_status;
    int (*fn)(int, char **);
};

static const struct cli_cmd cmds[] = {
    {"run", "run [--detect|--serialize|--off] [--stress] [--trace] [--report-dir DIR] [--option KEY=VALUE]... -- PROGRAM [ARGS...]",
     "run a program with tunerguard preloaded",
     "Finds libtunerguard.so next to the tunerguard binary (build tree) or in ../lib, ../lib/x86_64-linux-gnu or "
     "../lib64 relative to it (installed tree; $TUNERGUARD_LIB overrides), prepends it to LD_PRELOAD (preloads already "
     "set are kept, after it), adds the options to TUNERGUARD_OPTIONS (options already set in the environment are "
     "kept; the ones given here come later and win), passes the log_path in force made absolute against the "
     "directory run was started in (so processes that change directory still write there), runs PROGRAM, and when "
     "it ends prints on stderr the report files that run created, by absolute path, or \"no report files\" (a report the library could only write to stderr is above it). The library itself rejects an option it does not know with one "
     "line on stderr and exit status 2 before the program runs (this is what --stress and --trace do with a "
     "library that lacks them).",
     {{"--detect", "mode=detect: report races (the library's default)"},
      {"--serialize", "mode=serialize: the second thread entering a tuner waits until the first leaves"},
      {"--off", "mode=off: load the library but do nothing"},
      {"--stress", "stress=1: widen race windows (needs a library that has the option)"},
      {"--trace", "trace=1: also write a Chrome trace PREFIX.<pid>.trace.json (needs a library that has the option)"},
      {"--report-dir DIR", "write reports as DIR/tunerguard.<pid>.{txt,jsonl} (DIR is created); without it the "
                           "reports go where log_path says (default ./tunerguard.<pid>.*, . being where run started)"},
      {"--option KEY=VALUE", "any TUNERGUARD_OPTIONS pair, repeatable (see `TUNERGUARD_OPTIONS=help=1 tunerguard run -- true`)"},
      {"-h, --help", "this help"}},
     "The program's exit status; 128+N when it was killed by signal N; 126/127 when it could not be executed; "
     "2 for a usage error, a --report-dir that cannot be created, or when libtunerguard.so is not found.",
     cli_run},
    {"repro", "repro [--gpu [--devices A,B]] [--runs N] [--python PY] [SCENARIO...]",
     "run the race reproducers without tunerguard, under detect and under serialize",
     "Without --gpu: the CPU reproducers (tests/repro: a model of Triton 3.6's Autotuner and a stand-in libcuda from "
     "the build tree) through tests/repro/run_repro.py. With --gpu: the real-Triton scenarios of "
     "tests/gpu/triton_races.py, each run in a fresh TRITON_CACHE_DIR, with the scenario's threads on device 0 "
     "or, with --devices A,B, alternating between devices A and B (threads on two GPUs share one Autotuner per "
     "kernel as well); when there is no GPU or no Triton it prints "
     "one \"skipped:\" line and exits 0. Scenarios: seeds004, cached_subclass, hammer, reset_to_zero (default: all). "
     "Prints a table scenario x mode -> outcome (failed / reported / passed), runs, median seconds. Expected: "
     "none -> failed, detect -> reported, serialize -> passed. Needs the source tree (compiled in; "
     "$TUNERGUARD_SOURCE_DIR overrides).",
     {{"--gpu", "use real Triton on a GPU (tests/gpu/triton_races.py)"},
      {"--devices A,B", "with --gpu: put the scenario's threads on devices A and B in turn (default 0,0)"},
      {"--runs N", "runs of each scenario x mode (default 1)"},
      {"--python PY", "interpreter for the children (default: $PYTHON, else python3)"},
      {"--json", "print the results as one JSON document instead of the table"},
      {"-h, --help", "this help"}},
     "0 when every outcome is the expected one (or skipped); 1 when some differ; 2 usage error or missing pieces.",
     cli_repro},
    {"report", "report [--json] [--trace OUT] PATH...",
     "summarize report files of one or many processes",
     "PATH is a report file or a directory searched to any depth (links below it not followed, each file read "
     "once) for PREFIX.[rank<R>.]<pid>[.anything].{jsonl,txt}. Per process, the JSON Lines file is read; the text "
     "file (.txt) is the fallback when there is no readable .jsonl. Only regular files are read; a file or folder "
     "that cannot be read in full (unreadable, a FIFO or link, cut short, a newer schema) is named in one line on "
     "stderr. Prints races per kernel with their severity, the processes and ranks involved, the first "
     "occurrence (its local date and time and its file; copies of a file counted once), the processes that died of a fatal signal (SIGSEGV, SIGBUS, "
     "SIGABRT, SIGFPE, SIGILL: the signal, the thread, and the kernel whose tuner it was inside, linked to that "
     "process's race report) and the SUMMARY lines.",
     {{"--json", "print the summary as one JSON document"},
      {"--trace OUT", "merge the Chrome trace files (<prefix>.<pid>.trace.json, possibly truncated) found under the "
                      "PATHs into OUT, one file for Perfetto or chrome://tracing"},
      {"-h, --help", "this help"}},
     "1 when a record fails the run by the rule of the exitcode= option (a race, not one a serialize wait "
     "prevented; an exception linked to one; a deadlock; ...) or a process died of a fatal signal; else 0 (only "
     "prevented races or informational kinds: tuning under load, method replaced); 4 and 5: the same with some "
     "input not read in full (named on stderr); 2 usage error, no report file "
     "under the PATHs, or --trace OUT not writable or one of the inputs.",
     cli_report},
    {"doctor", "doctor [--python PY]",
     "check what would happen if a program were run here",
     "Checks the Python interpreters (python3 on PATH, $PYTHON, --python: CPython 3.9 to 3.15, or a free-threaded 3.13t or 3.14t), "
     "whether libcuda.so.1 loads and its driver version, the Triton and torch versions, whether the library's hooks "
     "arm in a test child (a Python process with the library preloaded and a test target), whether "
     "TUNERGUARD_OPTIONS is valid, whether its log_path directory takes reports, and whether its suppressions "
     "file reads and parses in a Python process. Each line starts with OK, WARN or FAIL and says what to do.",
     {{"--python PY", "also check this interpreter"}, {"-h, --help", "this help"}},
     "0 when no line is FAIL; 1 otherwise; 2 usage error.",
     cli_doctor},
};
#define NCMDS (sizeof cmds / sizeof cmds[0])

static const struct cli_cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < NCMDS; i++)
        if (strcmp(cmds[i].name, name) == 0)
            return &cmds[i];
    return NULL;
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_usage(const char *sub, const char *fmt, ...)
{
    if (fmt) { /* through cli_errf's escaping: the text may quote an argument */
        va_list ap;
        va_start(ap, fmt);
        char text[1024];
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        cli_errf("%s", text);
    }
    const struct cli_cmd *c = sub ? find_cmd(sub) : NULL;
    if (c)
        fprintf(stderr, "usage: tunerguard %s\n(tunerguard %s --help for more)\n", c->synopsis, c->name);
    else
        fputs("usage: tunerguard run|repro|report|doctor ... (tunerguard --help for more)\n", stderr);
    return CLI_EXIT_USAGE;
}

/* Print S wrapped at 78 columns with INDENT spaces. */
static void wrap(const char *s, int indent)
{
    int col = 0;
    while (*s) {
        while (*s == ' ')
            s++;
        size_t w = strcspn(s, " ");
        if (!w)
            break;
        if (col > indent && col + 1 + (int)w > 78) {
            putchar('\n');
            col = 0;
        }
        if (col == 0) {
            printf("%*s", indent, "");
            col = indent;
        } else {
            putchar(' ');
            col++;
        }
        fwrite(s, 1, w, stdout);
        col += (int)w;
        s += w;
    }
    if (col)
        putchar('\n');
}

static void print_cmd_help(const struct cli_cmd *c)
{
    printf("usage: tunerguard %s\n\n", c->synopsis);
    wrap(c->summary, 0);
    putchar('\n');
    wrap(c->description, 0);
    puts("\noptions:");
    for (size_t i = 0; i < 16 && c->opts[i].term; i++) {
        printf("  %s\n", c->opts[i].term);
        wrap(c->opts[i].desc, 6);
    }
    puts("\nexit status:");
    wrap(c->exit_status, 2);
}

int cli_help(const char *sub)
{
    const struct cli_cmd *c = sub ? find_cmd(sub) : NULL;
    if (c) {
        print_cmd_help(c);
        return 0;
    }
    puts("usage: tunerguard COMMAND [ARGS...]\n");
    puts("Find and prevent threads racing inside Triton's autotuner (libtunerguard.so).\n");
    puts("commands:");
    for (size_t i = 0; i < NCMDS; i++)
        printf("  %-8s %s\n", cmds[i].name, cmds[i].summary);
    puts("  help     help COMMAND: the help of one command\n");
    puts("tunerguard COMMAND --help for the options of a command; tunerguard --man for the man page;");
    puts("tunerguard --lib prints the path of the library `run` preloads (for LD_PRELOAD=...).");
    return 0;
}

/* ---- roff ------------------------------------------------------------------ */

static void roff_text(const char *s)
{
    int bol = 1;
    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", stdout);
        bol = 0;
        if (*s == '\\')
            fputs("\\e", stdout);
        else if (*s == '-')
            fputs("\\-", stdout);
        else
            putchar(*s);
        if (*s == '\n')
            bol = 1;
    }
}

static int print_man(void)
{
    puts(".\\\" Generated by `tunerguard --man` from tools/tunerguard.c; do not edit.");
    puts(".TH TUNERGUARD 1 \"\" \"tunerguard " TG_VERSION "\" \"User Commands\"");
    puts(".SH NAME\ntunerguard \\- find and prevent threads racing inside Triton's autotuner");
    puts(".SH SYNOPSIS");
    for (size_t i = 0; i < NCMDS; i++) {
        fputs(".B tunerguard\n", stdout);
        roff_text(cmds[i].synopsis);
        puts("\n.br");
    }
    puts(".B tunerguard\n\\-\\-lib | \\-\\-version | \\-\\-man");
    puts(".SH DESCRIPTION");
    roff_text("tunerguard runs programs with libtunerguard.so preloaded, runs the race reproducers, summarizes "
              "reports and checks the environment. The library detects a second thread entering a Triton "
              "Autotuner another thread is inside, reports it (mode=detect) or makes it wait (mode=serialize). "
              "--lib prints the absolute path of the library run preloads (for LD_PRELOAD=... in a shell or a "
              "Dockerfile); --version prints the version and the build id.\n");
    puts(".SH COMMANDS");
    for (size_t i = 0; i < NCMDS; i++) {
        const struct cli_cmd *c = &cmds[i];
        printf(".SS %s\n", c->name);
        roff_text(c->summary);
        puts(".\n.PP");
        roff_text(c->description);
        putchar('\n');
        for (size_t j = 0; j < 16 && c->opts[j].term; j++) {
            puts(".TP\n.B");
            roff_text(c->opts[j].term);
            putchar('\n');
            roff_text(c->opts[j].desc);
            putchar('\n');
        }
        puts(".PP\nExit status:");
        roff_text(c->exit_status);
        putchar('\n');
    }
    puts(".SH ENVIRONMENT");
    puts(".TP\n.B TUNERGUARD_OPTIONS");
    roff_text("key=value pairs separated by ':' read by the library (mode, log_path, targets, exitcode, "
              "halt_on_race, verbosity, help); TUNERGUARD_OPTIONS=help=1 prints the table.\n");
    puts(".TP\n.B TUNERGUARD_LIB");
    roff_text("path of libtunerguard.so to use instead of the one found next to the binary.\n");
    puts(".TP\n.B TUNERGUARD_SOURCE_DIR");
    roff_text("source tree holding tests/repro and tests/gpu, for repro.\n");
    puts(".TP\n.B PYTHON");
    roff_text("interpreter used by repro and checked by doctor.\n");
    puts(".SH FILES");
    roff_text("PREFIX.<pid>.txt, PREFIX.<pid>.jsonl (PREFIX.rank<R>.<pid>.* with $RANK set): the reports; "
              "schema in docs/report-schema.md.\n");
    puts(".SH SEE ALSO\n.BR ld.so (8)");
    return 0;
}

/* rc, or 1 with one line when what was printed did not reach stdout (a
 * full disk, a closed pipe). */
static int stdout_written(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tunerguard: cannot write to standard output: %s\n", strerror(errno));
        return rc ? rc : 1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage(NULL, "no command given");
    const char *sub = argv[1];
    if (cli_is_help(sub))
        return cli_help(NULL);
    if (strcmp(sub, "help") == 0) {
        if (argc > 2 && !find_cmd(argv[2]))
            return cli_usage(NULL, "no command '%s'", argv[2]);
        return cli_help(argc > 2 ? argv[2] : NULL);
    }
    if (strcmp(sub, "--man") == 0)
        return stdout_written(print_man());
    if (strcmp(sub, "--version") == 0) {
        puts("tunerguard " TG_VERSION " (build " TG_BUILD_ID ")");
        return stdout_written(0);
    }
    if (strcmp(sub, "--lib") == 0) {
        char lib[4096];
        if (cli_find_lib(lib, sizeof lib) < 0) {
            fprintf(stderr, "tunerguard: libtunerguard.so not found (looked at %s); set TUNERGUARD_LIB\n", lib);
            return CLI_EXIT_USAGE;
        }
        puts(lib);
        return stdout_written(0);
    }
    const struct cli_cmd *c = find_cmd(sub);
    if (!c)
        return cli_usage(NULL, "unknown command '%s'", sub);
    return c->fn(argc - 1, argv + 1);
}
