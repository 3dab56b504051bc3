/* tunerguard report: summarize report files of one or many processes, and
 * merge Chrome trace files.
 *
 * Contract: PATHs are files or folders.  A folder is walked to any depth
 * (cli_walk.c: symbolic links below it not followed, each folder once) for
 * files named PREFIX.[rank<R>.]<pid>[.anything].{jsonl,txt,trace.json}; a
 * file PATH is read whatever its name, by its extension.  Every file is
 * opened non-blocking, without following a link (except a PATH itself), and
 * read only when fstat says it is a regular file; each file (dev, inode) is
 * read once.  For one stem the .jsonl is read and the .txt only for its
 * SUMMARY lines; a .txt without a readable .jsonl is parsed as the fallback
 * (no timestamps there).  Records of a report schema newer than this
 * tunerguard's make it refuse that file by name.  A file or folder that
 * cannot be read in full (unreadable, not a regular file, a link, lines that
 * are not records, cut short) is named in one line on stderr, what could be
 * read of it is used, and CLI_EXIT_INCOMPLETE is added to the status.
 * "fatal" records (a process that died of SIGSEGV, SIGBUS, SIGABRT, SIGFPE or
 * SIGILL; in the fallback, and for a .jsonl without any, the .txt's "fatal
 * signal" block) are listed per process and linked to the race records of
 * that process (pid, rank): the kernel by the record's race_seq, else by its
 * tuner instance.  Exit: 1 when a record fails the run by exitcode='s rule
 * (tg_report_fails: a race, not one a serialize wait prevented, an exception,
 * a deadlock, ...; not an informational kind) or a fatal signal was found,
 * else 0; 4 or 5 the same with some input not read in full; 2 usage error,
 * nothing found, or --trace OUT not writable or one of the inputs. */
#include "cli_report.h"
#include "cli_json.h"

#include "reports/report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum kind { K_NONE, K_JSONL, K_TXT, K_TRACE };

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static enum kind kind_of(const char *name)
{
    return has_suffix(name, ".trace.json") ? K_TRACE
           : has_suffix(name, ".jsonl")    ? K_JSONL
           : has_suffix(name, ".txt")      ? K_TXT
                                           : K_NONE;
}

static size_t ext_len(enum kind k)
{
    return k == K_TRACE ? 11 : k == K_JSONL ? 6 : 4;
}

/* A report file name: PREFIX.[rank<R>.]<pid>[.anything].EXT, i.e. some
 * dot-separated part after the first is all digits (PREFIX may be empty:
 * log_path=DIR/ writes DIR/.<pid>.txt). */
static enum kind report_kind(const char *name)
{
    enum kind k = kind_of(name);
    if (k == K_NONE)
        return K_NONE;
    const char *end = name + strlen(name) - ext_len(k);
    const char *p = memchr(name, '.', (size_t)(end - name));
    while (p && p < end) {
        const char *q = p + 1;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
        if (q > p + 1 && (q == end || *q == '.'))
            return k;
        p = memchr(q, '.', (size_t)(end - q));
    }
    return K_NONE;
}

void cli_report_problem(struct state *st, const char *path, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    cli_errf("%s: %s", path, what);
    st->problems++;
}

static const char *type_name(mode_t m)
{
    return S_ISLNK(m) ? "a symbolic link (not followed)"
           : S_ISFIFO(m) ? "a FIFO, not a regular file"
           : S_ISSOCK(m) ? "a socket, not a regular file"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device, not a regular file"
           : S_ISDIR(m) ? "a folder, not a regular file"
                        : "not a regular file";
}

/* Read the file NAME of folder DFD (AT_FDCWD: NAME is a path), shown as
 * PATH, into OUT: opened non-blocking (a FIFO cannot hang us), not through a
 * symbolic link unless FOLLOW, and read only when fstat says it is a regular
 * file.  Returns 0 when read, 1 when this file (dev, inode) was read before
 * (nothing done), -1 when it could not be read (named, counted). */
#define CLI_REPORT_MAX_BYTES (1024LL * 1024 * 1024) /* 1 GiB */

static int load(struct state *st, int dfd, const char *name, const char *path, int follow, struct cli_buf *out)
{
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (fd < 0) {
        if (errno == ELOOP && !follow)
            cli_report_problem(st, path, "%s; skipped", type_name(S_IFLNK));
        else
            cli_report_problem(st, path, "cannot open: %s; skipped", strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        cli_report_problem(st, path, "%s; skipped", type_name(sb.st_mode));
        close(fd);
        return -1;
    }
    if (!cli_pairset_add(&st->seen, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino)) {
        close(fd);
        return 1;
    }
    /* A report file is lines of text of a process's races: far below this.
     * Larger (a sparse file, a file that is not ours) is read no further than
     * its size: said, and the other files still read. */
    if (sb.st_size > CLI_REPORT_MAX_BYTES) {
        cli_report_problem(st, path, "%lld bytes: too large for a report file (at most %lld are read); skipped",
                (long long)sb.st_size, (long long)CLI_REPORT_MAX_BYTES);
        close(fd);
        return -1;
    }
    int rc = cli_read_fd(fd, out);
    int e = errno;
    close(fd);
    if (rc < 0) {
        cli_report_problem(st, path, "cannot read: %s; skipped", strerror(e));
        return -1;
    }
    return 0;
}

static long num_after(const char *s, const char *key, long def)
{
    const char *p = strstr(s, key);
    return p ? strtol(p + strlen(key), NULL, 10) : def;
}

/* R of a file named PREFIX.rank<R>.<pid>.EXT, else -1 (a fatal block's
 * header has no rank=). */
static long rank_in_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = strstr(base, ".rank"); p; p = strstr(p + 1, ".rank")) {
        char *e;
        if (p[5] >= '0' && p[5] <= '9') {
            long r = strtol(p + 5, &e, 10);
            if (*e == '.')
                return r;
        }
    }
    return -1;
}

/* The kind whose SUMMARY "what" the text S (after "SUMMARY: tunerguard: ",
 * LEN bytes) begins with, else TG_REPORT_NKINDS. */
static enum tg_report_kind txt_kind(const char *s, size_t len)
{
    for (int k = 0; k < TG_REPORT_NKINDS; k++) {
        size_t n = strlen(tg_report_kinds[k].what);
        if (len >= n && !memcmp(s, tg_report_kinds[k].what, n) && (len == n || s[n] == ' '))
            return (enum tg_report_kind)k;
    }
    return TG_REPORT_NKINDS;
}

/* A race block of a .txt read as the fallback: added, and counted by
 * exitcode='s rule; *CUR's kernel is taken. */
static void add_txt_race(struct state *st, struct race *cur, const char *method, const char *path)
{
    if (cur->kernel && !strcmp(cur->kernel, "?")) {
        free(cur->kernel);
        cur->kernel = NULL;
    }
    if (!cur->kernel) { /* the tuner then, by the method called */
        cur->unnamed = 1;
        cur->kernel = strdup(method[0] ? method : "an unnamed tuner");
    }
    if (!cur->where)
        cur->where = strdup("");
    cur->file = strdup(path);
    st->failing += (size_t)tg_report_fails(TG_REPORT_RACE, cur->serialized, !cur->high, 0);
    cli_add_race(st, *cur);
    cur->kernel = NULL;
}

/* The text report: SUMMARY lines always; races only when FULL (no .jsonl);
 * "fatal signal" blocks when FATALS.  A fatal block is
 *   WARNING: tunerguard: fatal signal SIGSEGV (pid=4242)
 *     Received by thread tid=4250, si_code=1, fault address 0x8
 *   ... SUMMARY: tunerguard: fatal signal SIGSEGV in thread tid=4250 (pid=4242)
 * Of its tuner state only "(no thread is inside a tuner)" is read: no kernel
 * or instance there. */
static void read_txt(struct state *st, const char *path, char *text, size_t tlen, int full, int fatals)
{
    struct race cur = {0};
    char method[128] = ""; /* of the race block being read */
    int in_race = 0, block_low = 0;
    long cur_fatal = -1; /* index in st->fatals of the fatal block being read */
    long blocks = 0;
    char *tend = text + tlen;
    for (char *line = text; line < tend;) {
        char *nl = memchr(line, '\n', (size_t)(tend - line));
        size_t len = nl ? (size_t)(nl - line) : (size_t)(tend - line);
        char hdr[512];
        snprintf(hdr, sizeof hdr, "%.*s", (int)len, line);
        if (!strncmp(line, "SUMMARY: tunerguard: ", 21))
            cli_add_summary(st, line, len);
        if (!strncmp(hdr, "WARNING: tunerguard: ", 21)) {
            cur_fatal = -1;
            if (fatals && !strncmp(hdr + 21, "fatal signal ", 13)) {
                cur_fatal = (long)st->nfatals;
                const char *sig = hdr + 34;
                cli_add_fatal(st, (struct fatal){.pid = num_after(hdr, "pid=", 0),
                                                 .rank = num_after(hdr, "rank=", rank_in_name(path)),
                                                 .seq = -1, .signal = strndup(sig, strcspn(sig, " (")), .tid = -1,
                                                 .in_tuner = -1, .race_seq = -1, .reports_before = blocks,
                                                 .file = strdup(path)});
            }
            blocks++;
        } else if (cur_fatal >= 0 && !strncmp(hdr, "  Received by thread tid=", 25)) {
            struct fatal *f = &st->fatals[cur_fatal];
            f->tid = num_after(hdr, "tid=", -1);
            const char *fa = strstr(hdr, "fault address ");
            if (fa && !f->fault_addr)
                f->fault_addr = strndup(fa + 14, strcspn(fa + 14, ", "));
        } else if (cur_fatal >= 0 && !strcmp(hdr, "    (no thread is inside a tuner)")) {
            st->fatals[cur_fatal].in_tuner = 0;
        }
        if (full) {
            if (!strncmp(hdr, "WARNING: tunerguard: ", 21)) {
                long pid = num_after(hdr, "pid=", 0), rank = num_after(hdr, "rank=", rank_in_name(path));
                cli_note_proc(st, pid, rank);
                if (in_race) /* the block before was cut short of its SUMMARY: counted as written */
                    add_txt_race(st, &cur, method, path);
                in_race = strstr(hdr, "entered a tuner") != NULL || strstr(hdr, "left a tuner") != NULL;
                if (strstr(hdr, "method replaced"))
                    st->replaced++;
                free(cur.kernel);
                cur = (struct race){.pid = pid, .rank = rank, .ts = -1, .wall = -1, .seq = -1, .high = 1,
                                    .serialized = strstr(hdr, "race prevented (serialize)") != NULL};
                method[0] = '\0';
                block_low = 0;
            } else if (in_race && !strncmp(line, "  Call of ", 10)) {
                const char *on = memmem(line, len, " on ", 4);
                snprintf(method, sizeof method, "%.*s", on ? (int)(on - line - 10) : 0, line + 10);
                const char *k = memmem(line, len, "on kernel '", 11); /* this line only: strstr ran to the file's end */
                if (k) {
                    k += 11;
                    const char *q = memchr(k, '\'', (size_t)(line + len - k));
                    free(cur.kernel);
                    cur.kernel = q ? strndup(k, (size_t)(q - k)) : NULL;
                }
            } else if (!strncmp(line, "  Severity: ", 12)) {
                block_low = !strncmp(line + 12, "low", 3);
                cur.high = !block_low;
            } else if (in_race && !strncmp(line, "  Prevented (serialize mode): ", 30)) {
                cur.serialized = 1;
            } else if (in_race && !strncmp(line, "SUMMARY: ", 9)) {
                const char *in = memmem(line, len, " in ", 4);
                cur.where = strndup(in ? in + 4 : "", in ? (size_t)(line + len - in - 4) : 0);
                add_txt_race(st, &cur, method, path);
                cur = (struct race){0};
                in_race = 0;
            } else if (!strncmp(line, "SUMMARY: tunerguard: ", 21)) {
                /* another kind: it fails the run by exitcode='s rule or not */
                enum tg_report_kind k = txt_kind(line + 21, len - 21);
                if (k != TG_REPORT_NKINDS && k != TG_REPORT_RACE)
                    st->failing += (size_t)tg_report_fails(k, 0, block_low, 0);
            }
        }
        line = nl ? nl + 1 : tend;
    }
    if (full && in_race) /* cut short of its SUMMARY line: what was read of it counts */
        add_txt_race(st, &cur, method, path);
    free(cur.kernel);
    /* Every block the library writes ends with this line: anything else at
     * the end is a block cut short. */
    static const char delim[] = "==================\n";
    if (tlen && (tlen < sizeof delim - 1 || memcmp(tend - (sizeof delim - 1), delim, sizeof delim - 1)))
        cli_report_problem(st, path, "truncated: its last report block is cut short (the process stopped while writing it?)");
}

/* NAME (of folder DFD, shown as PATH) with the extension of kind FROM
 * replaced by TO; heap. */
static char *sibling(const char *name, enum kind from, const char *to)
{
    size_t stem = strlen(name) - ext_len(from);
    char *s = malloc(stem + strlen(to) + 1);
    if (!s) {
        fputs("tunerguard: out of memory\n", stderr);
        exit(1);
    }
    memcpy(s, name, stem);
    strcpy(s + stem, to);
    return s;
}

/* Is NAME in folder DFD a regular file (not through a link)? */
static int regular_at(int dfd, const char *name)
{
    struct stat sb;
    return fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode);
}

static int listed(const struct state *st, const char *path)
{
    for (size_t i = 0; i < st->nexplicit; i++)
        if (!strcmp(st->explicit_files[i], path))
            return 1;
    return 0;
}

/* Read the .txt NAME of folder DFD (shown as PATH) if it is a regular file:
 * FULL as the fallback, else its SUMMARY lines (and its fatal blocks when
 * FATALS).  Returns 1 when it was read. */
static int read_txt_at(struct state *st, int dfd, const char *name, const char *path, int follow, int full,
                       int fatals)
{
    struct cli_buf b = {0};
    int r = load(st, dfd, name, path, follow, &b);
    if (r == 0)
        read_txt(st, path, b.s, b.len, full, fatals);
    cli_buf_free(&b);
    return r == 0;
}

/* One report or trace file: NAME in folder DFD (AT_FDCWD: NAME is the path),
 * shown as PATH; FOLLOW for a PATH given on the command line, WALKED for a
 * file found in a folder. */
static void read_one(struct state *st, int dfd, const char *name, const char *path, enum kind k, int follow,
                     int walked)
{
    struct cli_buf b = {0};
    if (k == K_TRACE) {
        if (st->want_traces && load(st, dfd, name, path, follow, &b) == 0) {
            st->ntraces++;
            if (cli_trace_add(&st->trace, path, b.s, b.len) != 0)
                st->problems++; /* named by cli_trace_add */
        }
    } else if (k == K_JSONL) {
        int r = load(st, dfd, name, path, follow, &b);
        char *txt = sibling(name, K_JSONL, ".txt");
        char *txt_path = sibling(path, K_JSONL, ".txt");
        if (r == 0) {
            st->nreports++;
            int nfatal = cli_read_jsonl(st, path, b.s, b.len);
            /* the .txt's SUMMARY lines; its fatal blocks when the .jsonl has
             * no fatal record (older library); the whole .txt when the
             * .jsonl held no record at all (empty: JSON Lines turned off
             * after a failed write; cut in its first line) */
            if (nfatal >= 0 && !st->jsonl_records && regular_at(dfd, txt))
                read_txt_at(st, dfd, txt, txt_path, 0, 1, 1);
            else if (nfatal >= 0 && !st->copy_file && regular_at(dfd, txt)) /* a copy's: counted with the original */
                read_txt_at(st, dfd, txt, txt_path, 0, 0, nfatal == 0);
            else if (nfatal < 0 && regular_at(dfd, txt))
                load(st, dfd, txt, txt_path, 0, &b); /* refused with its .jsonl: only marked as read */
        } else if (r < 0 && regular_at(dfd, txt)) {
            /* the .jsonl could not be read: its .txt is the fallback */
            st->nreports += (size_t)read_txt_at(st, dfd, txt, txt_path, 0, 1, 1);
        }
        free(txt);
        free(txt_path);
    } else {
        char *jsonl = sibling(name, K_TXT, ".jsonl");
        char *jsonl_path = sibling(path, K_TXT, ".jsonl");
        /* read with its .jsonl, there (the .jsonl comes first in a folder;
         * on the command line it may come later) */
        int with_jsonl = regular_at(dfd, jsonl) && (walked || listed(st, jsonl_path));
        if (!with_jsonl)
            st->nreports += (size_t)read_txt_at(st, dfd, name, path, follow, 1, 1);
        free(jsonl);
        free(jsonl_path);
    }
    cli_buf_free(&b);
}

/* cli_walk's callback: the report-shaped entries of a folder. */
static void on_entry(void *ctx, int dfd, const char *name, const char *path, const struct stat *sb)
{
    struct state *st = ctx;
    enum kind k = report_kind(name);
    if (k == K_NONE || (k == K_TRACE && !st->want_traces))
        return;
    if (!S_ISREG(sb->st_mode)) {
        cli_report_problem(st, path, "%s; skipped", type_name(sb->st_mode));
        return;
    }
    read_one(st, dfd, name, path, k, 0, 1);
}

/* --trace OUT: refused when it is one of the files read (it would be
 * overwritten by the merge of itself). */
static int write_trace(struct state *st, const char *out)
{
    struct stat sb;
    if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        cli_errf("--trace %s is a folder; name the file to write", out);
        return -1;
    }
    if (stat(out, &sb) == 0 && cli_pairset_has(&st->seen, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino)) {
        cli_errf("--trace %s is one of the files read; not overwritten (choose another output)", out);
        return -1;
    }
    return cli_trace_write(&st->trace, out);
}

int cli_report(int argc, char **argv)
{
    int as_json = 0;
    const char *trace_out = NULL;
    int npaths = 0;
    char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            free(paths);
            return cli_help("report");
        }
        if (!strcmp(a, "--json")) {
            as_json = 1;
        } else if (!strcmp(a, "--trace") || !strncmp(a, "--trace=", 8)) {
            trace_out = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (!trace_out || !*trace_out) {
                free(paths);
                return cli_usage("report", "--trace needs an output file");
            }
        } else if (!strcmp(a, "--")) {
            while (++i < argc)
                paths[npaths++] = argv[i];
        } else if (a[0] == '-' && a[1]) {
            free(paths);
            return cli_usage("report", "unknown flag '%s'", a);
        } else {
            paths[npaths++] = argv[i];
        }
    }
    if (!npaths) {
        free(paths);
        return cli_usage("report", "no report file or directory given");
    }
    struct state *st = calloc(1, sizeof *st);
    if (!st) {
        free(paths);
        return 1;
    }
    st->want_traces = trace_out != NULL;
    st->explicit_files = calloc((size_t)npaths, sizeof *st->explicit_files);
    if (!st->explicit_files)
        abort();
    for (int i = 0; i < npaths; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) == 0 && S_ISREG(sb.st_mode))
            st->explicit_files[st->nexplicit++] = paths[i];
    }
    for (int i = 0; i < npaths; i++) {
        const char *p = paths[i];
        struct stat sb;
        if (stat(p, &sb) < 0) {
            cli_report_problem(st, p, "%s; skipped", strerror(errno)); /* counted: this input was not read */
        } else if (S_ISDIR(sb.st_mode)) {
            st->problems += cli_walk(p, &st->seen, on_entry, st);
        } else if (!S_ISREG(sb.st_mode)) {
            cli_report_problem(st, p, "%s; skipped", type_name(sb.st_mode));
        } else if (kind_of(p) == K_NONE) {
            cli_report_problem(st, p, "not a report (.jsonl, .txt) or trace (.trace.json) file; skipped");
        } else if (kind_of(p) != K_TRACE || st->want_traces) {
            read_one(st, AT_FDCWD, p, p, kind_of(p), 1, 0);
        }
    }
    free(paths);

    int rc = 0;
    if (trace_out) {
        if (!st->ntraces) {
            cli_errf("no trace files (*.trace.json) under the given paths; %s not written", trace_out);
            st->problems++; /* what was asked is missing; the races found still count */
        } else if (write_trace(st, trace_out) < 0) {
            rc = CLI_EXIT_USAGE;
        }
    }
    if (!st->nreports && !(trace_out && st->ntraces)) {
        if (st->problems) {
            cli_errf("no report file could be read under the given paths (%zu not read, named above)", st->problems);
        } else {
            cli_errf("no report files (<prefix>.<pid>.jsonl or .txt) under the given paths");
            rc = CLI_EXIT_USAGE;
        }
    } else if (st->nreports) {
        cli_report_sort(st);
        cli_report_print(st, as_json);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            cli_errf("cannot write the report to standard output: %s", strerror(errno));
            rc = 1;
        }
    }
    if (!rc)
        rc = (st->failing || st->nfatals ? 1 : 0) | (st->problems ? CLI_EXIT_INCOMPLETE : 0);
    cli_free_state(st);
    return rc;
}
