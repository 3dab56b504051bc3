/* Process facts and report file creation.  See process.h. */
#include "core/process.h"
#include "core/startup.h"
#include "core/log.h"
#include "core/options.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TG_RANK_LIMIT (1L << 30)

/* The option as configured, and its full length (may exceed the copy);
 * zero (in .bss, not 4 KB of .data every process maps) until configured,
 * read as the default "tunerguard" then. */
static char cfg_path[TG_PROC_STEM_MAX + 1];
static size_t cfg_len;

/* Computed once: 0 not yet, 1 being computed, 2 ready (read-only then). */
_Atomic int tg__proc_facts_state; /* shared with core/process_files.c */
#define facts_state tg__proc_facts_state
static int facts_rank = -1;
static int facts_to_stderr;
char tg__proc_facts_stem[TG_PROC_STEM_MAX + 1]; /* shared with core/process_files.c */
#define facts_stem tg__proc_facts_stem
/* Said at the first getter call after computing (arming stays silent). */
enum { SAY_NONE, SAY_RANK, SAY_LONG };
static int facts_say;
static char facts_bad_rank[48];
static atomic_flag facts_said = ATOMIC_FLAG_INIT;

/* The id of this process's report files: <pid> (token 0) or <pid>.<token>.
 * id_pid is stored last: a reader that sees its own pid sees its token. */
_Atomic pid_t tg__proc_id_pid; /* read and set by core/process_files.c */
_Atomic uint64_t tg__proc_id_token;
#define id_pid tg__proc_id_pid
#define id_token tg__proc_id_token

TG_STARTUP void tg_proc_configure(const char *log_path)
{
    if (!log_path || !log_path[0])
        log_path = "tunerguard";
    cfg_len = strlen(log_path);
    size_t n = cfg_len < TG_PROC_STEM_MAX ? cfg_len : TG_PROC_STEM_MAX;
    memcpy(cfg_path, log_path, n);
    cfg_path[n] = '\0';
    atomic_store(&facts_state, 0);
    atomic_flag_clear(&facts_said);
    facts_say = SAY_NONE;
    atomic_store(&id_pid, 0);
}

TG_STARTUP void tg_proc_setup(void)
{
    static _Atomic int setup TG_STARTUP_DATA; /* 0 not yet, 1 being set up, 2 done */
    if (atomic_load_explicit(&setup, memory_order_acquire) == 2)
        return;
    int expect = 0;
    if (atomic_compare_exchange_strong(&setup, &expect, 1)) {
        tg_proc_configure(tg_opts.log_path);
        atomic_store_explicit(&setup, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&setup, memory_order_acquire) != 2)
        sched_yield(); /* another thread is copying the option */
}

/* -1: unset or empty; -2: set but not a rank. */
TG_STARTUP static int parse_rank(const char *s)
{
    if (!s || !s[0])
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -2;
        v = v * 10 + (*p - '0');
        if (v >= TG_RANK_LIMIT)
            return -2;
    }
    return (int)v;
}

/* A printable copy of s for a diagnostic: other bytes as \xNN, cut at len. */
static void printable(char *dst, size_t len, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (; *s && o + 5 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            dst[o++] = (char)c;
        } else {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        }
    }
    if (*s && o + 3 < len)
        dst[o++] = '.', dst[o++] = '.', dst[o++] = '.';
    dst[o] = '\0';
}

/* Read at arming in every Python process: in RELRO, not .rodata
 * (TG_STARTUP_RODATA, core/startup.h). */
static const char rank_env[] TG_STARTUP_RODATA = "RANK";
static const char to_stderr[] TG_STARTUP_RODATA = "stderr";
static const char default_leaf[] TG_STARTUP_RODATA = "tunerguard";

TG_STARTUP static void compute_unlocked(void)
{
    const char *env = getenv(rank_env);
    int r = parse_rank(env);
    facts_rank = r >= 0 ? r : -1;
    facts_say = SAY_NONE;
    if (r == -2) {
        printable(facts_bad_rank, sizeof facts_bad_rank, env);
        facts_say = SAY_RANK;
    }

    facts_to_stderr = strcmp(cfg_path, to_stderr) == 0;
    int from_cfg = !facts_to_stderr && cfg_len;
    const char *base = from_cfg ? cfg_path : default_leaf;
    size_t base_len = from_cfg ? cfg_len : sizeof default_leaf - 1;
    char *out = facts_stem;
    size_t room = sizeof facts_stem, used = 0;
    out[0] = '\0';
    if (base[0] != '/') {
        /* Relative: the directory of now (arming), so a later chdir() of the
         * program does not move its reports.  If the directory is gone
         * (getcwd fails), the name stays relative. */
        if (getcwd(out, room - 1)) {
            used = strlen(out);
            if (used > 1)
                out[used++] = '/';
            while (base[0] == '.' && base[1] == '/') {
                base += 2;
                base_len -= 2;
            }
        } else {
            used = 0;
        }
    }
    char rank_sfx[24] = "";
    if (facts_rank >= 0) {
        char digits[12];
        int i = (int)sizeof digits, v = facts_rank;
        do
            digits[--i] = (char)('0' + v % 10);
        while ((v /= 10) > 0);
        memcpy(rank_sfx, ".rank", 5);
        memcpy(rank_sfx + 5, digits + i, sizeof digits - (size_t)i);
        rank_sfx[5 + sizeof digits - (size_t)i] = '\0';
    }
    /* log_path=DIR/ names a folder: the files are DIR/tunerguard.<id>.*,
     * not hidden DIR/.<id>.* files that a directory listing skips. */
    /* A log_path longer than its copy is not read past the copy's end (it
     * is "too long" below). */
    int whole = !from_cfg || cfg_len <= TG_PROC_STEM_MAX;
    /* (no literal here: its text would be in .rodata, core/startup.h) */
    size_t leaf_len = whole && base_len && base[base_len - 1] == '/' ? sizeof default_leaf - 1 : 0;
    size_t sfx_len = strlen(rank_sfx);
    if (used + base_len + leaf_len + sfx_len >= room) {
        facts_stem[0] = '\0';
        facts_to_stderr = 1;
        if (facts_say == SAY_NONE)
            facts_say = SAY_LONG;
        return;
    }
    memcpy(out + used, base, base_len);
    used += base_len;
    memcpy(out + used, default_leaf, leaf_len);
    used += leaf_len;
    memcpy(out + used, rank_sfx, sfx_len + 1);
}

TG_STARTUP static void compute(void)
{
    if (atomic_load_explicit(&facts_state, memory_order_acquire) == 2)
        return;
    int expect = 0;
    if (!atomic_compare_exchange_strong(&facts_state, &expect, 1)) {
        /* Another thread is computing (a few syscalls): wait for it. */
        while (atomic_load_explicit(&facts_state, memory_order_acquire) != 2)
            sched_yield();
        return;
    }
    compute_unlocked();
    atomic_store_explicit(&facts_state, 2, memory_order_release);
}

/* Compute, and say once what was wrong with the input. */
TG_STARTUP static void facts(void)
{
    compute();
    if (facts_say == SAY_NONE || atomic_flag_test_and_set(&facts_said))
        return;
    if (facts_say == SAY_RANK)
        tg__warn("RANK='%s' is not a rank (digits only, 0 to %ld); report files are named without one",
                 facts_bad_rank, TG_RANK_LIMIT - 1);
    else
        tg__warn("log_path is %zu bytes long, too long for a report path (at most %d with the directory); "
                 "reports go to stderr", cfg_len, TG_PROC_STEM_MAX - 1);
}

/* For core/process_files.c: the facts without the diagnostic. */
void tg__proc_compute(void)
{
    compute();
}

TG_STARTUP void tg_proc_arm(void)
{
    compute();
}

int tg_proc_rank(void)
{
    facts();
    return facts_rank;
}

int tg_proc_text_to_stderr(void)
{
    facts();
    return facts_to_stderr;
}

const char *tg_proc_stem(void)
{
    facts();
    return facts_stem;
}

/* ---- secure execution ------------------------------------------------------ */

TG_STARTUP int tg_proc_secure(void)
{
    return getauxval(AT_SECURE) != 0;
}

TG_STARTUP static void add_name(char *names, size_t len, int *count, const char *name)
{
    size_t used = strlen(names);
    const char *sep = *count ? ", " : "";
    if (used + strlen(sep) + strlen(name) + 1 <= len) {
        memcpy(names + used, sep, strlen(sep));
        memcpy(names + used + strlen(sep), name, strlen(name) + 1);
    }
    (*count)++;
}

TG_STARTUP int tg_proc_secure_filter(struct tg_options *o, int secure, char *names, size_t len)
{
    int count = 0;
    if (len)
        names[0] = '\0';
    if (!secure)
        return 0;
    if (strcmp(o->log_path, "stderr") != 0) {
        if (strcmp(o->log_path, "tunerguard") != 0)
            add_name(names, len, &count, "log_path");
        if (tg_options_set_string(o, &o->log_path, "stderr") < 0) {
            /* no 7 bytes in a constructor: do nothing rather than write files */
            o->mode = TG_MODE_OFF;
            return count;
        }
    }
    if (o->suppressions[0]) {
        add_name(names, len, &count, "suppressions");
        tg_options_set_string(o, &o->suppressions, ""); /* the default: no copy, cannot fail */
    }
    if (o->cupti_path[0]) {
        add_name(names, len, &count, "cupti_path");
        tg_options_set_string(o, &o->cupti_path, "");
    }
    if (o->trace) {
        add_name(names, len, &count, "trace");
        o->trace = 0;
    }
    return count;
}
