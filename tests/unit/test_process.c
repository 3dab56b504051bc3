/* Process facts (core/process.c): $RANK by one rule, the absolute stem,
 * report files created new under a unique id (planted symlinks, FIFOs, a
 * second process with the same pid), their mode, files read only when
 * regular, and the secure-execution decision. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/options.h"
#include "core/process.h"
#include "report_fixture.h"

static char dir[64];
static char errpath[128];
static char prefix[128];

/* A fresh directory, stderr captured into a file outside it, $RANK unset. */
static void setup(void)
{
    fx_scratch_dir(dir, sizeof dir, "proc");
    snprintf(errpath, sizeof errpath, "%s.stderr", dir);
    fx_capture_stderr(errpath);
    umask(022);
    snprintf(prefix, sizeof prefix, "%s/tg", dir);
    tg_proc_configure(prefix);
}

static const char *in_dir(const char *fmt, long a)
{
    static char p[4][256];
    static int k;
    char name[160];
    snprintf(name, sizeof name, fmt, a);
    char *out = p[k++ & 3];
    snprintf(out, 256, "%s/%s", dir, name);
    return out;
}

static int is_reg(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The report files of one create call: txt and jsonl. */
static struct tg_proc_file pair[2];

static int create_pair(void)
{
    pair[0].ext = ".txt";
    pair[1].ext = ".jsonl";
    return tg_proc_create(pair, 2, O_RDWR | O_APPEND);
}

/* <dir>/tg.<pid>.<n><ext>: returns n, or 0 when path is not of that shape. */
static unsigned long long id_token(const char *path, const char *ext)
{
    char head[160];
    snprintf(head, sizeof head, "%s/tg.%ld.", dir, (long)getpid());
    size_t h = strlen(head), n = strlen(path), e = strlen(ext);
    if (n <= h + e || strncmp(path, head, h) || strcmp(path + n - e, ext))
        return 0;
    unsigned long long v = 0;
    for (size_t i = h; i < n - e; i++) {
        if (path[i] < '0' || path[i] > '9')
            return 0;
        v = v * 10 + (unsigned)(path[i] - '0');
    }
    return v;
}

/* ---- the rank ------------------------------------------------------------- */

Test(process, rank_one_strict_rule, .init = setup)
{
    static const struct {
        const char *env;
        int rank;
    } cases[] = {
        {"3", 3}, {"0", 0}, {"007", 7}, {"1073741823", 1073741823},
        {"3x", -1}, {"-1", -1}, {" 3", -1}, {"3 ", -1}, {"+3", -1}, {"", -1}, {"1073741824", -1},
        {"99999999999999999999", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("RANK", cases[i].env, 1);
        tg_proc_configure(prefix);
        cr_expect_eq(tg_proc_rank(), cases[i].rank, "RANK='%s'", cases[i].env);
        char want[200];
        if (cases[i].rank >= 0)
            snprintf(want, sizeof want, "%s.rank%d", prefix, cases[i].rank);
        else
            snprintf(want, sizeof want, "%s", prefix);
        cr_expect_str_eq(tg_proc_stem(), want, "RANK='%s'", cases[i].env);
    }
}

Test(process, bad_rank_said_once_and_only_when_used, .init = setup)
{
    setenv("RANK", "3x\033[2J", 1);
    tg_proc_configure(prefix);
    tg_proc_arm(); /* arming is silent: nothing observable before a target is used */
    cr_expect_str_eq(fx_slurp(errpath), "");
    cr_expect_eq(tg_proc_rank(), -1);
    cr_expect_eq(tg_proc_rank(), -1);
    cr_expect_str_eq(tg_proc_stem(), prefix);
    cr_expect_str_eq(fx_slurp(errpath), "tunerguard: RANK='3x\\x1b[2J' is not a rank (digits only, 0 to 1073741823); "
                                     "report files are named without one\n");
}

/* Every file of a process is named by the same stem: with RANK=3x none of
 * them carries a rank (before: the text and JSON Lines got .rank3., the
 * trace and the fatal fallback did not). */
Test(process, one_stem_for_every_kind, .init = setup)
{
    setenv("RANK", "3x", 1);
    tg_proc_configure(prefix);
    cr_assert_eq(create_pair(), 0);
    struct tg_proc_file tr = {.ext = ".trace.json"};
    cr_assert_eq(tg_proc_create(&tr, 1, O_WRONLY), 0);
    cr_expect_str_eq(pair[0].path, in_dir("tg.%ld.txt", getpid()));
    cr_expect_str_eq(pair[1].path, in_dir("tg.%ld.jsonl", getpid()));
    cr_expect_str_eq(tr.path, in_dir("tg.%ld.trace.json", getpid()));

    setenv("RANK", "3", 1);
    tg_proc_configure(prefix);
    cr_assert_eq(create_pair(), 0);
    cr_expect_str_eq(pair[0].path, in_dir("tg.rank3.%ld.txt", getpid()));
    cr_expect_str_eq(pair[1].path, in_dir("tg.rank3.%ld.jsonl", getpid()));
}

/* ---- the stem ------------------------------------------------------------- */

Test(process, relative_stem_resolved_at_arming, .init = setup)
{
    cr_assert_eq(chdir(dir), 0);
    char cwd[200], want[300];
    cr_assert(getcwd(cwd, sizeof cwd));
    tg_proc_configure("./sub/tg");
    tg_proc_arm();
    cr_assert_eq(chdir("/"), 0);
    snprintf(want, sizeof want, "%s/sub/tg", cwd);
    cr_expect_str_eq(tg_proc_stem(), want);
    cr_expect_eq(tg_proc_text_to_stderr(), 0);

    tg_proc_configure("stderr"); /* text on stderr; the trace keeps the default name */
    cr_expect_eq(tg_proc_text_to_stderr(), 1);
    cr_expect_str_eq(tg_proc_stem(), "/tunerguard");
}

/* log_path=DIR/ : DIR/tunerguard.<pid>.txt (before: a hidden DIR/.<pid>.txt
 * that `tunerguard report` skipped). */
Test(process, log_path_naming_a_folder, .init = setup)
{
    char p[200], want[300];
    snprintf(p, sizeof p, "%s/", dir);
    setenv("RANK", "2", 1);
    tg_proc_configure(p);
    snprintf(want, sizeof want, "%s/tunerguard.rank2", dir);
    cr_expect_str_eq(tg_proc_stem(), want);
    cr_assert_eq(create_pair(), 0);
    cr_expect_str_eq(pair[0].path, in_dir("tunerguard.rank2.%ld.txt", getpid()));
}

Test(process, too_long_log_path_goes_to_stderr_with_one_line, .init = setup)
{
    static char big[70000];
    memset(big, 'a', sizeof big - 1);
    big[0] = '/';
    tg_proc_configure(big);
    cr_expect_eq(tg_proc_text_to_stderr(), 1);
    cr_expect_str_eq(tg_proc_stem(), "");
    cr_expect_eq(create_pair(), -1);
    cr_expect_eq(pair[0].err, ENAMETOOLONG);
    cr_expect_str_eq(fx_slurp(errpath), "tunerguard: log_path is 69999 bytes long, too long for a report path (at most "
                                     "3999 with the directory); reports go to stderr\n");
}

/* ---- creating report files ------------------------------------------------ */

Test(process, common_case_keeps_the_pid_name, .init = setup)
{
    cr_assert_eq(create_pair(), 0);
    cr_expect_str_eq(pair[0].path, in_dir("tg.%ld.txt", getpid()));
    cr_expect_str_eq(pair[1].path, in_dir("tg.%ld.jsonl", getpid()));
    cr_expect(pair[0].fd > 2 && pair[1].fd > 2);
    struct stat sb;
    cr_assert_eq(fstat(pair[0].fd, &sb), 0);
    cr_expect_eq(sb.st_mode & 0777, 0644);
    cr_expect(fcntl(pair[0].fd, F_GETFD) & FD_CLOEXEC);
    /* a later file of the same process (the trace) takes the same id */
    struct tg_proc_file tr = {.ext = ".trace.json"};
    cr_assert_eq(tg_proc_create(&tr, 1, O_WRONLY), 0);
    cr_expect_str_eq(tr.path, in_dir("tg.%ld.trace.json", getpid()));
}

/* A symlink planted at each report name: the target is untouched and the
 * files are new ones under one new id (before: append to the target, and
 * O_TRUNC for the trace). */
Test(process, planted_symlinks_are_left_alone, .init = setup)
{
    static const char *const exts[] = {".txt", ".jsonl", ".trace.json"};
    for (int k = 0; k < 3; k++) {
        char target[200], link[300];
        snprintf(target, sizeof target, "%s/precious%d", dir, k);
        int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, "keep me\n", 8), 8);
        close(fd);
        tg_proc_configure(prefix);
        /* a fresh process: a fork child has its own pid, hence its own names */
        pid_t child = fork();
        cr_assert_geq(child, 0);
        if (child == 0) {
            snprintf(link, sizeof link, "%s/tg.%ld%s", dir, (long)getpid(), exts[k]);
            if (symlink(target, link) < 0 || create_pair() < 0)
                _exit(10);
            struct tg_proc_file tr = {.ext = ".trace.json"};
            if (tg_proc_create(&tr, 1, O_WRONLY) < 0)
                _exit(11);
            if (write(pair[0].fd, "T", 1) != 1 || write(pair[1].fd, "J", 1) != 1 || write(tr.fd, "R", 1) != 1)
                _exit(12);
            unsigned long long a = id_token(pair[0].path, ".txt"), b = id_token(pair[1].path, ".jsonl"),
                               c = id_token(tr.path, ".trace.json");
            if (!a || a != b || a != c)
                _exit(13); /* one new id for all three */
            _exit(0);
        }
        int st;
        cr_assert_eq(waitpid(child, &st, 0), child);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child status %d", exts[k], st);
        cr_expect_str_eq(fx_slurp(target), "keep me\n", "%s: the symlink's target was written", exts[k]);
        for (int j = 0; j < 3; j++)
            cr_expect(!is_reg(in_dir(j == 0 ? "tg.%ld.txt" : j == 1 ? "tg.%ld.jsonl" : "tg.%ld.trace.json", child)),
                      "%s: a file was created at the taken id", exts[k]);
    }
}

/* A FIFO at the report name: never opened (before: the open blocked until
 * a reader came, forever at the first race). */
Test(process, fifo_at_report_name_does_not_block, .init = setup, .timeout = 20)
{
    cr_assert_eq(mkfifo(in_dir("tg.%ld.txt", getpid()), 0644), 0);
    alarm(10);
    cr_assert_eq(create_pair(), 0);
    alarm(0);
    cr_expect(id_token(pair[0].path, ".txt") != 0, "got %s", pair[0].path);
    cr_expect(id_token(pair[1].path, ".jsonl") == id_token(pair[0].path, ".txt"));
    cr_expect(is_reg(pair[0].path) && is_reg(pair[1].path));
}

/* Two processes with the same pid (containers, unshare -pf, a second run in
 * one folder): the second finds the first one's files and takes a new id;
 * one file of any kind marks the id as taken. */
Test(process, same_pid_twice_never_shares_files, .init = setup)
{
    /* the "other" process left only a trace under our pid */
    int fd = open(in_dir("tg.%ld.trace.json", getpid()), O_WRONLY | O_CREAT | O_EXCL, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "[\n", 2), 2);
    close(fd);
    cr_assert_eq(create_pair(), 0);
    unsigned long long id = id_token(pair[0].path, ".txt");
    cr_expect(id != 0, "reports joined the other process's id: %s", pair[0].path);
    cr_expect(!is_reg(in_dir("tg.%ld.txt", getpid())));
    cr_expect_str_eq(fx_slurp(in_dir("tg.%ld.trace.json", getpid())), "[\n");
    /* and a third process of that pid: yet another id */
    tg_proc_configure(prefix); /* forgets our id, as a new process would */
    struct tg_proc_file again[2] = {{.ext = ".txt"}, {.ext = ".jsonl"}};
    cr_assert_eq(tg_proc_create(again, 2, O_RDWR | O_APPEND), 0);
    unsigned long long id2 = id_token(again[0].path, ".txt");
    cr_expect(id2 != 0 && id2 != id, "%s vs %s", again[0].path, pair[0].path);
}

/* Our id chosen (by the trace), then a name of it taken by someone else:
 * the pair moves to a new id together and the half-made file is removed. */
Test(process, pair_moves_together, .init = setup)
{
    struct tg_proc_file tr = {.ext = ".trace.json"};
    cr_assert_eq(tg_proc_create(&tr, 1, O_WRONLY), 0);
    cr_assert_str_eq(tr.path, in_dir("tg.%ld.trace.json", getpid()));
    cr_assert_eq(symlink("/etc/passwd", in_dir("tg.%ld.jsonl", getpid())), 0);
    cr_assert_eq(create_pair(), 0);
    unsigned long long id = id_token(pair[0].path, ".txt");
    cr_expect(id != 0 && id == id_token(pair[1].path, ".jsonl"), "%s %s", pair[0].path, pair[1].path);
    cr_expect(!is_reg(in_dir("tg.%ld.txt", getpid())), "the half-made pair was left behind");
}

/* The id is chosen (the trace came first), and then a symlink appears at a
 * name of it: the check for taken names was done when the id was chosen,
 * so only O_EXCL|O_NOFOLLOW stands between the report and the target. */
Test(process, link_planted_after_the_id_was_chosen, .init = setup)
{
    struct tg_proc_file tr = {.ext = ".trace.json"};
    cr_assert_eq(tg_proc_create(&tr, 1, O_WRONLY), 0);
    char target[200];
    snprintf(target, sizeof target, "%s/precious", dir);
    int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0 && write(fd, "keep me\n", 8) == 8);
    close(fd);
    cr_assert_eq(symlink(target, in_dir("tg.%ld.txt", getpid())), 0);
    cr_assert_eq(create_pair(), 0);
    cr_assert_eq(write(pair[0].fd, "REPORT\n", 7), 7);
    cr_expect_str_eq(fx_slurp(target), "keep me\n");
    cr_expect(id_token(pair[0].path, ".txt") != 0, "%s", pair[0].path);
    cr_expect_str_eq(fx_slurp(pair[0].path), "REPORT\n");
}

Test(process, private_mode_in_a_directory_others_write, .init = setup)
{
    cr_assert_eq(chmod(dir, 01777), 0);
    cr_assert_eq(create_pair(), 0);
    struct stat sb;
    cr_assert_eq(fstat(pair[0].fd, &sb), 0);
    cr_expect_eq(sb.st_mode & 0777, 0600);
    cr_assert_eq(fstat(pair[1].fd, &sb), 0);
    cr_expect_eq(sb.st_mode & 0777, 0600);
}

Test(process, missing_directory_fails_without_retrying, .init = setup)
{
    char p[200];
    snprintf(p, sizeof p, "%s/no/such/tg", dir);
    tg_proc_configure(p);
    cr_expect_eq(create_pair(), -1);
    cr_expect_eq(pair[0].err, ENOENT);
    char want[300];
    snprintf(want, sizeof want, "%s/no/such/tg.%ld.txt", dir, (long)getpid());
    cr_expect_str_eq(pair[0].path, want);
}

/* ---- symbolic links on the way to the folder ------------------------------- */

/* dir/shared: a folder anyone may write (1777, root's when run as root);
 * dir/target: where a link points. */
static char shared[200], target[200];

static void links_setup(void)
{
    setup();
    snprintf(shared, sizeof shared, "%s/shared", dir);
    snprintf(target, sizeof target, "%s/target", dir);
    cr_assert_eq(mkdir(shared, 0777), 0);
    cr_assert_eq(chmod(shared, 01777), 0);
    cr_assert_eq(mkdir(target, 0755), 0);
}

/* A link at path to to, owned by uid (root can give it away; others skip). */
static void link_owned(const char *to, const char *path, uid_t uid)
{
    cr_assert_eq(symlink(to, path), 0, "symlink %s", path);
    if (uid != geteuid() && lchown(path, uid, (gid_t)-1) != 0)
        cr_skip_test("cannot give a link to uid %d (not root)", (int)uid);
}

static int txt_in(const char *folder)
{
    char p[300];
    snprintf(p, sizeof p, "%s/tg.%ld.txt", folder, (long)getpid());
    return is_reg(p);
}

/* A link named `name` in `folder`, owned by uid and pointing at target, as
 * the folder of log_path: the stem goes through it, the pair is created (or
 * not).  link: the link's path. */
static int create_through_link(const char *folder, const char *name, uid_t uid, char *link, size_t n)
{
    char stem[300];
    snprintf(link, n, "%s/%s", folder, name);
    link_owned(target, link, uid);
    snprintf(stem, sizeof stem, "%s/tg", link);
    tg_proc_configure(stem);
    return create_pair();
}

Test(process, planted_link_in_a_shared_folder_is_not_followed, .init = links_setup)
{
    char link[260];
    /* someone else's, in a folder anyone may write */
    cr_expect_eq(create_through_link(shared, "evil", 4242, link, sizeof link), -1);
    cr_expect_eq(pair[0].fd, -1);
    cr_expect_eq(pair[1].fd, -1);
    cr_expect(strstr(tg_proc_strerror(&pair[0]), "symbolic link 'evil'") != NULL, "%s", tg_proc_strerror(&pair[0]));
    cr_expect(!txt_in(target), "a file was created through the planted link");
    char want[400];
    snprintf(want, sizeof want, "%s/tg.%ld.txt", link, (long)getpid());
    cr_expect_str_eq(pair[0].path, want);
}

/* Followed: this user's link in a folder anyone may write, and someone
 * else's in this user's 0700 dir (nobody else could have put it there). */
Test(process, links_nobody_else_could_plant_are_followed, .init = links_setup)
{
    char link[260];
    const struct {
        const char *folder, *name;
        uid_t uid;
    } cases[] = {{shared, "mine", geteuid()}, {dir, "theirs", 4242}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(create_through_link(cases[i].folder, cases[i].name, cases[i].uid, link, sizeof link), 0,
                     "%s: %s", cases[i].name, tg_proc_strerror(&pair[0]));
        cr_expect(txt_in(target), "%s", cases[i].name);
        close(pair[0].fd);
        close(pair[1].fd);
        char p[300];
        snprintf(p, sizeof p, "%s/tg.%ld.txt", target, (long)getpid());
        unlink(p);
        snprintf(p, sizeof p, "%s/tg.%ld.jsonl", target, (long)getpid());
        unlink(p);
    }
}

Test(process, links_are_walked_like_the_kernel_walks_them, .init = links_setup)
{
    /* a relative target with "..", through a second link, then more path */
    char sub[260], a[260], b[260], stem[300];
    snprintf(sub, sizeof sub, "%s/sub", target);
    cr_assert_eq(mkdir(sub, 0755), 0);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    cr_assert_eq(symlink("b/../../target", a), 0); /* a -> b/../../target */
    cr_assert_eq(symlink("target/sub", b), 0);     /* b -> target/sub: a resolves to dir/target */
    snprintf(stem, sizeof stem, "%s/./sub//tg", a);
    tg_proc_configure(stem);
    cr_assert_eq(create_pair(), 0, "%s", tg_proc_strerror(&pair[0]));
    cr_expect(txt_in(sub), "not in %s", sub);
    close(pair[0].fd);
    close(pair[1].fd);
    /* a loop */
    char l1[260], l2[260];
    snprintf(l1, sizeof l1, "%s/l1", dir);
    snprintf(l2, sizeof l2, "%s/l2", dir);
    cr_assert_eq(symlink("l2", l1), 0);
    cr_assert_eq(symlink("l1", l2), 0);
    snprintf(stem, sizeof stem, "%s/tg", l1);
    tg_proc_configure(stem);
    cr_expect_eq(create_pair(), -1);
    cr_expect_eq(pair[0].err, ELOOP);
}

/* The process's id was chosen by an earlier file (the trace); a link planted
 * at the common name of a later one sends that one to a random id: the line
 * names the file written, not the planted name. */
Test(process, note_taken_names_the_file_written_after_a_late_link, .init = setup)
{
    struct tg_proc_file tr = {.ext = ".trace.json"};
    cr_assert_eq(tg_proc_create(&tr, 1, O_WRONLY), 0);
    cr_assert_eq(symlink("/etc/passwd", in_dir("tg.%ld.txt", getpid())), 0);
    cr_assert_eq(create_pair(), 0);
    tg_proc_note_taken(&pair[0]);
    char want[400];
    snprintf(want, sizeof want, "writing %s instead", pair[0].path);
    fflush(stderr);
    FILE *f = fopen(errpath, "r");
    cr_assert_not_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    cr_expect(strstr(buf, want) != NULL, "want '%s' in: %s", want, buf);
    close(tr.fd);
    close(pair[0].fd);
    close(pair[1].fd);
}

/* ---- files the library reads ---------------------------------------------- */

Test(process, open_read_regular_files_only, .init = setup, .timeout = 20)
{
    const char *kind = "x";
    const char *fifo = in_dir("fifo%ld", 0), *reg = in_dir("reg%ld", 0);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    alarm(10);
    cr_expect_eq(tg_proc_open_read(fifo, &kind), -2);
    alarm(0);
    cr_expect_str_eq(kind, "a FIFO");
    cr_expect_eq(tg_proc_open_read(dir, &kind), -2);
    cr_expect_str_eq(kind, "a directory");
    cr_expect_eq(tg_proc_open_read("/dev/null", &kind), -2);
    cr_expect_str_eq(kind, "a character device");
    errno = 0;
    cr_expect_eq(tg_proc_open_read(in_dir("none%ld", 0), &kind), -1);
    cr_expect_eq(errno, ENOENT);
    cr_expect_null(kind);
    int fd = open(reg, O_WRONLY | O_CREAT, 0644);
    close(fd);
    fd = tg_proc_open_read(reg, &kind);
    cr_expect(fd >= 0 && kind == NULL);
    cr_expect(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
}

/* ---- secure execution ----------------------------------------------------- */

Test(process, secure_filter_drops_environment_paths)
{
    struct tg_options o;
    char err[300], names[96];
    cr_assert_eq(tg_options_parse("log_path=/tmp/x/tg:suppressions=/etc/shadow:cupti_path=/tmp/evil.so:trace=1:"
                                  "mode=serialize",
                                  &o, err, sizeof err),
                 0, "%s", err);
    cr_expect_eq(tg_proc_secure_filter(&o, 0, names, sizeof names), 0);
    cr_expect_str_eq(names, "");
    cr_expect_str_eq(o.log_path, "/tmp/x/tg", "not secure: nothing changes");
    cr_expect_eq(tg_proc_secure_filter(&o, 1, names, sizeof names), 4);
    cr_expect_str_eq(names, "log_path, suppressions, cupti_path, trace");
    cr_expect_str_eq(o.log_path, "stderr");
    cr_expect_str_eq(o.suppressions, "");
    cr_expect_str_eq(o.cupti_path, "");
    cr_expect_eq(o.trace, 0);
    cr_expect_eq(o.mode, TG_MODE_SERIALIZE, "other options stay");
    tg_options_free(&o);

    /* defaults: nothing to name, but the reports still go to stderr */
    cr_assert_eq(tg_options_parse("", &o, err, sizeof err), 0);
    cr_expect_eq(tg_proc_secure_filter(&o, 1, names, sizeof names), 0);
    cr_expect_str_eq(o.log_path, "stderr");
    tg_options_free(&o);
    cr_assert_eq(tg_options_parse("log_path=a", &o, err, sizeof err), 0); /* shorter than "stderr" */
    cr_expect_eq(tg_proc_secure_filter(&o, 1, names, sizeof names), 1);
    cr_expect_str_eq(names, "log_path");
    cr_expect_str_eq(o.log_path, "stderr");
    tg_options_free(&o);
}
