/* TUNERGUARD_OPTIONS parsing.  The table is options.inc; this file only
 * expands it.  Pure: no I/O except tg_options_print_help.
 *
 * The constructor parses in every process the preload enters, most of which
 * never import a target (docs/benchmarks.md, "Start-up cost"): the path of
 * valid options calls no libc function a small program would not call
 * itself (string compares and copies only: no strtol, no malloc for a
 * default, snprintf only for an error), so it maps no page of libc of its
 * own. */
#include "core/options.h"
#include "core/startup.h"
#include "core/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tg_options tg_opts;

enum opt_kind { K_ENUM, K_STRING, K_INT, K_BOOL };

/* The text the constructor reads (names, defaults, the values of an enum)
 * is inside the row, not behind a pointer to .rodata: a process that never
 * imports a target reads only this table, in the RELRO pages
 * (TG_STARTUP_RODATA, core/startup.h).  Messages and help stay pointers:
 * only an error or help=1 reads them. */
#define OPT_NAME_MAX 20
#define OPT_DEF_MAX 12
#define OPT_ENUM_MAX 3
struct opt_row {
    char name[OPT_NAME_MAX];
    enum opt_kind kind;
    int lo, hi;
    char names[OPT_ENUM_MAX][10]; /* K_ENUM: value i is names[i]; "" after the last */
    const char *choices;          /* K_ENUM: "a, b, c" for messages */
    char def[OPT_DEF_MAX];
    const char *help;
    size_t offset;
};

#define TG_KIND_MODE K_ENUM, 0, 0, {"off", "detect", "serialize"}, "detect, serialize, off"
#define TG_KIND_DEADLOCK K_ENUM, 0, 0, {"proceed", "abort"}, "proceed, abort"
#define TG_KIND_WAITEND K_ENUM, 0, 0, {"proceed", "wait"}, "proceed, wait"
#define TG_KIND_STRING K_STRING, 0, 0, {""}, NULL
#define TG_KIND_INT(lo, hi) K_INT, lo, hi, {""}, NULL
#define TG_KIND_BOOL K_BOOL, 0, 1, {""}, NULL

#define TG_OPTION(name, type, def, help)                                                              \
    _Static_assert(sizeof #name <= OPT_NAME_MAX && sizeof def <= OPT_DEF_MAX, "options.inc: " #name \
                   "'s name or default is longer than struct opt_row holds");
#include "options.inc"
#undef TG_OPTION

enum {
#define TG_OPTION(name, type, def, help) ROW_##name,
#include "options.inc"
#undef TG_OPTION
};

static const struct opt_row rows[] TG_STARTUP_RODATA = {
#define TG_OPTION(name, type, def, help) {#name, TG_KIND_##type, def, help, offsetof(struct tg_options, name)},
#include "options.inc"
#undef TG_OPTION
};
#define NROWS (sizeof rows / sizeof rows[0])

const char *tg_mode_name(int mode)
{
    return (mode >= 0 && mode < OPT_ENUM_MAX) ? rows[ROW_mode].names[mode] : "?";
}

static void valid_keys(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NROWS && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", rows[i].name);
}

/* What strtol(text, &end, 10) accepts, the whole of text[0..len) used:
 * leading white space, a sign, decimal digits.  -1 when it is not such a
 * number; a value beyond any option's range saturates (and is rejected by
 * the range check, as strtol's LONG_MAX/LONG_MIN were). */
TG_STARTUP static int parse_long(const char *text, size_t len, long *out)
{
    size_t i = 0;
    if (len == 0 || len >= 32) /* as long as strtol's copy could be */
        return -1;
    while (i < len && (text[i] == ' ' || (text[i] >= '\t' && text[i] <= '\r')))
        i++;
    int neg = 0;
    if (i < len && (text[i] == '+' || text[i] == '-'))
        neg = text[i++] == '-';
    if (i == len)
        return -1;
    long v = 0;
    for (; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        if (v < 100000000000L)
            v = v * 10 + (text[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

/* A string option's default is the row's own text, not a copy: a process
 * left at the defaults allocates nothing.  Only a value that differs is a
 * copy of ours (malloc), freed when replaced. */
TG_STARTUP static int owned(const struct opt_row *r, const char *value)
{
    return value && value != r->def;
}

TG_STARTUP static int set_string(struct tg_options *o, const struct opt_row *r, const char *val, size_t vlen)
{
    char **slot = (char **)((char *)o + r->offset);
    char *copy = (char *)r->def;
    if (strlen(r->def) != vlen || strncmp(val, r->def, vlen) != 0) {
        copy = malloc(vlen + 1);
        if (!copy)
            return -1;
        memcpy(copy, val, vlen);
        copy[vlen] = '\0';
    }
    if (owned(r, *slot))
        free(*slot);
    *slot = copy;
    return 0;
}

/* User text for a message (tg_options_escape), in a buffer of the
 * statement's own. */
#define ESC(s, n) tg_options_escape((s), (n), (char[256]){0}, 256)

/* Does s hold a control byte (a newline would split the one-line messages
 * that name the report path)? */
TG_STARTUP static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

/* Set one value; on error fill err and return -1. */
TG_STARTUP static int set_value(struct tg_options *o, const struct opt_row *r, const char *val, size_t vlen,
                     char *err, size_t errlen)
{
    char *slot = (char *)o + r->offset;
    switch (r->kind) {
    case K_ENUM:
        for (int m = 0; m < OPT_ENUM_MAX && r->names[m][0]; m++) {
            if (strlen(r->names[m]) == vlen && strncmp(val, r->names[m], vlen) == 0) {
                *(int *)slot = m;
                return 0;
            }
        }
        snprintf(err, errlen, "bad value '%s' for option '%s' (valid: %s)", ESC(val, vlen), r->name, r->choices);
        return -1;
    case K_BOOL:
        if (vlen == 1 && (val[0] == '0' || val[0] == '1')) {
            *(int *)slot = val[0] - '0';
            return 0;
        }
        snprintf(err, errlen, "bad value '%s' for option '%s' (valid: 0, 1)", ESC(val, vlen), r->name);
        return -1;
    case K_INT: {
        long v;
        if (parse_long(val, vlen, &v) < 0 || v < r->lo || v > r->hi) {
            snprintf(err, errlen, "bad value '%s' for option '%s' (valid: an integer from %d to %d)", ESC(val, vlen),
                     r->name, r->lo, r->hi);
            return -1;
        }
        *(int *)slot = (int)v;
        return 0;
    }
    case K_STRING:
        if (set_string(o, r, val, vlen) < 0) {
            snprintf(err, errlen, "out of memory parsing option '%s'", r->name);
            return -1;
        }
        return 0;
    }
    return -1;
}

TG_STARTUP static void set_defaults(struct tg_options *o)
{
    char err[8];
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < NROWS; i++)
        set_value(o, &rows[i], rows[i].def, strlen(rows[i].def), err, sizeof err);
}

void tg_options_free(struct tg_options *o)
{
    for (size_t i = 0; i < NROWS; i++) {
        if (rows[i].kind == K_STRING) {
            char **slot = (char **)((char *)o + rows[i].offset);
            if (owned(&rows[i], *slot))
                free(*slot);
            *slot = NULL;
        }
    }
}

TG_STARTUP int tg_options_set_string(struct tg_options *o, char **slot, const char *text)
{
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].kind == K_STRING && (char *)o + rows[i].offset == (char *)slot)
            return set_string(o, &rows[i], text, strlen(text));
    return -1;
}

TG_STARTUP static int is_sep(char c)
{
    return c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

TG_STARTUP static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* `p` is just after a ':' inside an unquoted targets= value.  Does a new
 * key=value pair start there?  A '=' can never be part of a targets value,
 * so it does when the text up to the next ':' or whitespace holds a '='
 * (a known key or not: an unknown one is then named as unknown). */
TG_STARTUP static int pair_follows(const char *p)
{
    for (; *p && !is_sep(*p); p++)
        if (*p == '=')
            return 1;
    return 0;
}

const char *tg_options_escape(const char *s, size_t n, char *buf, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (!len)
        return buf;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        size_t need = c < 0x20 || c == 0x7f ? 4 : 1;
        if (o + need + 4 > len) { /* room for "..." and the NUL */
            if (o + 4 <= len)
                memcpy(buf + o, "...", 3), o += 3;
            break;
        }
        if (need == 4) {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o] = '\0';
    return buf;
}

/* A Python identifier at s[0..n): ASCII letters, digits and '_', and any
 * non-ASCII code point (str.isidentifier() accepts letters of every script;
 * a non-letter one passes here and then names a class that is never found,
 * which the guard says), not starting with an ASCII digit. */
TG_STARTUP static int ident_ok(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0 || (u[0] >= '0' && u[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c >= 0x80) {
            size_t k = tg_utf8_len(u + i, n - i);
            if (!k)
                return 0;
            i += k;
        } else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            i++;
        } else {
            return 0;
        }
    }
    return 1;
}

/* Dotted identifiers at s[0..n): "a.b.c", no empty part. */
TG_STARTUP static int dotted_ok(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || s[i] == '.') {
            if (!ident_ok(s + start, i - start))
                return 0;
            start = i + 1;
        }
    return 1;
}

/* The first c in s[0..n), or NULL (memchr: one libc import fewer). */
TG_STARTUP static const char *find_char(const char *s, size_t n, char c)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == c)
            return s + i;
    return NULL;
}

/* One entry e[0..n) of targets=: 0 when valid; -1 when it is not
 * module:Class.method (the caller says so); -2 with err filled when a name
 * is longer than tunerguard holds. */
TG_STARTUP static int target_entry_bad(const char *key, const char *e, size_t n, char *err, size_t errlen)
{
    char ebuf[400];
    const char *colon = find_char(e, n, ':');
    const char *dot = NULL;
    for (const char *q = colon ? colon : e; q < e + n; q++)
        if (*q == '.')
            dot = q;
    if (!colon || !dot || find_char(colon + 1, (size_t)(e + n - colon - 1), ':') || !dotted_ok(e, (size_t)(colon - e)) ||
        !dotted_ok(colon + 1, (size_t)(dot - colon - 1)) || !ident_ok(dot + 1, (size_t)(e + n - dot - 1)))
        return -1; /* the caller's message: the value is not module:Class.method[,...] */
    const char *what = NULL;
    size_t have = 0;
    int max = 0;
    if ((have = (size_t)(colon - e)) > TG_TARGET_MODULE_MAX)
        what = "module name", max = TG_TARGET_MODULE_MAX;
    else if ((have = (size_t)(dot - colon - 1)) > TG_TARGET_CLASS_MAX)
        what = "class name", max = TG_TARGET_CLASS_MAX;
    else if ((have = (size_t)(e + n - dot - 1)) > TG_TARGET_METHOD_MAX)
        what = "method name", max = TG_TARGET_METHOD_MAX;
    if (!what)
        return 0;
    snprintf(err, errlen, "bad value for option '%s': in '%s' the %s is %zu bytes, more than the %d tunerguard "
             "holds", key, tg_options_escape(e, n, ebuf, sizeof ebuf), what, have, max);
    return -2;
}

/* targets= or tuning= (key): "module:Class.method[,module:Class.method...]",
 * at most TG_TARGETS_MAX entries (aside: what the count leaves out, said
 * with it).  0, or -1 with err filled. */
TG_STARTUP static int check_targets(const char *key, const char *aside, const char *v, char *err, size_t errlen)
{
    if (!*v)
        return 0;
    int count = 0;
    for (const char *p = v;; count++) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int rc = target_entry_bad(key, p, n, err, errlen);
        if (rc == -2)
            return -1;
        if (rc < 0) {
            char vbuf[400];
            snprintf(err, errlen, "bad value '%s' for option '%s' (valid: module:Class.method[,module:Class.method...])",
                     tg_options_escape(v, strlen(v), vbuf, sizeof vbuf), key);
            return -1;
        }
        if (!end)
            break;
        p = end + 1;
    }
    if (count + 1 > TG_TARGETS_MAX) {
        snprintf(err, errlen, "bad value for option '%s': %d entries, more than the %d tunerguard holds%s", key,
                 count + 1, TG_TARGETS_MAX, aside);
        return -1;
    }
    return 0;
}

/* Does the list of valid entries v name class cls ("module:Class", n bytes)
 * in one of its entries? */
TG_STARTUP static int names_class(const char *v, const char *cls, size_t n)
{
    for (const char *p = v; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *dot = p + len;
        while (dot > p && *dot != '.')
            dot--;
        if ((size_t)(dot - p) == n && strncmp(p, cls, n) == 0)
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

/* Is e (n bytes) one of the entries of the list v? */
TG_STARTUP static int names_entry(const char *v, const char *e, size_t n)
{
    for (const char *p = v; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, e, n) == 0)
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

/* tuning= (valid entries): each names a method of a targets= class, the
 * tuning step of that declared tuner.  0, or -1 with err filled. */
TG_STARTUP static int check_tuning(const struct tg_options *o, char *err, size_t errlen)
{
    if (check_targets("tuning", "", o->tuning, err, errlen) < 0)
        return -1;
    for (const char *p = o->tuning; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *dot = p + len;
        while (dot > p && *dot != '.')
            dot--;
        if (!names_class(o->targets, p, (size_t)(dot - p))) {
            char ebuf[400];
            snprintf(err, errlen, "bad value for option 'tuning': '%s' is a method of %.*s, which no targets= entry "
                     "names (a tuning step belongs to a tuner declared with targets=)",
                     tg_options_escape(p, len, ebuf, sizeof ebuf), (int)(dot - p), p);
            return -1;
        }
        if (names_entry(o->targets, p, len)) {
            char ebuf[400];
            snprintf(err, errlen, "bad value for option 'tuning': '%s' is named in targets= too: the tuning step is "
                     "the method the tuner measures in, not its entry point (without tuning= every overlap of "
                     "its calls is a race)", tg_options_escape(p, len, ebuf, sizeof ebuf));
            return -1;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

/* Pairs are separated by ':' (sanitizer style) or whitespace.  A value that
 * begins with ' or " runs to the next same quote (no escapes), so it may hold
 * ':' and spaces: log_path='my reports/tg'.  An unquoted value runs to the
 * next separator, except that in a targets= value a ':' belongs to the value
 * unless a new key=value pair follows it, so targets=mod:Class.method needs
 * no quoting. */
/* strcspn(p, ": \t\n\r") for a message: one libc function fewer for the
 * loader to import (each is dynamic-symbol space in every process). */
static size_t till_sep(const char *p)
{
    size_t n = 0;
    while (p[n] && p[n] != ':' && p[n] != ' ' && p[n] != '\t' && p[n] != '\n' && p[n] != '\r')
        n++;
    return n;
}

TG_STARTUP int tg_options_parse(const char *text, struct tg_options *out, char *err, size_t errlen)
{
    set_defaults(out);
    if (!text)
        return 0;
    const char *p = text;
    while (*p) {
        while (is_sep(*p))
            p++;
        if (!*p)
            break;
        const char *start = p;
        const char *eq = start;
        while (*eq && *eq != '=' && !is_sep(*eq))
            eq++;
        if (*eq != '=' || eq == start) {
            size_t len = till_sep(start);
            snprintf(err, errlen, "malformed option '%s' in TUNERGUARD_OPTIONS (expected key=value pairs separated by ':')",
                     ESC(start, len));
            goto fail;
        }
        size_t klen = (size_t)(eq - start);
        const struct opt_row *r = NULL;
        for (size_t i = 0; i < NROWS; i++) {
            if (strlen(rows[i].name) == klen && strncmp(rows[i].name, start, klen) == 0) {
                r = &rows[i];
                break;
            }
        }
        if (!r) {
            char keys[512];
            valid_keys(keys, sizeof keys);
            snprintf(err, errlen, "unknown option '%s' in TUNERGUARD_OPTIONS (valid: %s)", ESC(start, klen), keys);
            goto fail;
        }
        const char *val = eq + 1;
        size_t vlen;
        if (*val == '\'' || *val == '"') {
            char quote = *val++;
            const char *close = strchr(val, quote);
            if (!close) {
                snprintf(err, errlen,
                         "unterminated quote in the value of option '%s' in TUNERGUARD_OPTIONS (it begins with %c "
                         "and has no closing %c)",
                         r->name, quote, quote);
                goto fail;
            }
            vlen = (size_t)(close - val);
            p = close + 1;
            if (*p && !is_sep(*p)) {
                size_t len = till_sep(p);
                snprintf(err, errlen,
                         "malformed option '%s' in TUNERGUARD_OPTIONS (text '%s' after the closing %c; expected ':' "
                         "or a space)",
                         r->name, ESC(p, len), quote);
                goto fail;
            }
        } else {
            int colon_ok = r->offset == offsetof(struct tg_options, targets) ||
                           r->offset == offsetof(struct tg_options, tuning);
            p = val;
            while (*p && !is_space(*p) && !(*p == ':' && (!colon_ok || pair_follows(p + 1))))
                p++;
            vlen = (size_t)(p - val);
        }
        if (set_value(out, r, val, vlen, err, errlen) < 0)
            goto fail;
    }
    if (check_targets("targets", " (the built-in ones aside)", out->targets, err, errlen) < 0 || check_tuning(out, err, errlen) < 0)
        goto fail;
    if (out->log_path[0] == '\0') {
        snprintf(err, errlen, "bad value '' for option 'log_path' (valid: a path prefix, or 'stderr')");
        goto fail;
    }
    if (has_control(out->log_path)) {
        snprintf(err, errlen, "bad value '%s' for option 'log_path' (valid: a path prefix without control "
                 "characters, or 'stderr')", ESC(out->log_path, strlen(out->log_path)));
        goto fail;
    }
    return 0;
fail:
    tg_options_free(out);
    set_defaults(out);
    return -1;
}

void tg_options_print_help(int fd)
{
    char line[512];
    int n = snprintf(line, sizeof line,
                     "tunerguard options (TUNERGUARD_OPTIONS=\"key=value:key=value\"; quote a value that holds ':' or "
                     "spaces: log_path='my reports/tg'):\n");
    if (write(fd, line, (size_t)n) < 0)
        return;
    for (size_t i = 0; i < NROWS; i++) {
        const char *kind = rows[i].kind == K_ENUM ? rows[i].choices
                           : rows[i].kind == K_BOOL ? "0|1"
                           : rows[i].kind == K_INT ? "int" : "string";
        n = snprintf(line, sizeof line, "  %-14s %-22s default %-12s %s\n", rows[i].name, kind,
                     rows[i].def[0] ? rows[i].def : "''", rows[i].help);
        if (n > (int)sizeof line - 1)
            n = (int)sizeof line - 1;
        if (write(fd, line, (size_t)n) < 0)
            return;
    }
}
