/* TUNERGUARD_OPTIONS: "key=value:key=value", sanitizer style: pairs separated
 * by ':' or whitespace; a value beginning with ' or " runs to the next same
 * quote (log_path='my reports/tg').  The table of keys is core/options.inc. */
#ifndef TG_OPTIONS_H
#define TG_OPTIONS_H

#include <stddef.h>

enum tg_mode { TG_MODE_OFF = 0, TG_MODE_DETECT, TG_MODE_SERIALIZE };

enum tg_deadlock { TG_DEADLOCK_PROCEED = 0, TG_DEADLOCK_ABORT };

/* on_wait_timeout: what a serialized wait does past wait_timeout while the
 * holder is blocked outside tunerguard (guard/serialize_wait.c). */
enum tg_wait_end { TG_WAIT_END_PROCEED = 0, TG_WAIT_END_WAIT };

#define TG_OPT_TYPE_MODE int
#define TG_OPT_TYPE_DEADLOCK int
#define TG_OPT_TYPE_WAITEND int
#define TG_OPT_TYPE_STRING char *
#define TG_OPT_TYPE_INT(lo, hi) int
#define TG_OPT_TYPE_BOOL int

struct tg_options {
#define TG_OPTION(name, type, def, help) TG_OPT_TYPE_##type name;
#include "options.inc"
#undef TG_OPTION
};

/* targets=: at most TG_TARGETS_MAX entries (the built-in ones aside), each
 * module:Class.method with names of at most these many bytes (UTF-8): what
 * the arming table (loader/py_arm_internal.h) and a guard's names
 * (guard/guard_internal.h) hold.  More is refused at parsing. */
#define TG_TARGETS_MAX 64
#define TG_TARGET_MODULE_MAX 95
#define TG_TARGET_CLASS_MAX 63
#define TG_TARGET_METHOD_MAX 47

/* One entry of a targets= or tuning= list, "module:Class.method[,...]", as
 * spans of the list's own text: the one reading of both options' grammar,
 * by the option check (core/options.c), arming (loader/py_arm.c) and the
 * guard (tuning=, guard/tuning_marks.c).  colon is the entry's first ':',
 * dot the last '.' after it; either NULL where the entry has none (only the
 * option check meets such an entry: it refuses it). */
struct tg_target_span {
    const char *text; /* the entry, len bytes, not NUL-terminated */
    size_t len;
    const char *colon, *dot;
};

/* The entry at *p into *out, *p moved to the next one: 1, or 0 past the
 * last.  Start with *p = the list, NULL or "" for none.  Empty entries
 * (",," or a leading comma) are entries; a trailing comma ends the list
 * (the option check refuses both).  Reads only the list: no call, no
 * allocation (inlined into the constructor's code, core/startup.h). */
__attribute__((always_inline)) static inline int tg_target_next(const char **p, struct tg_target_span *out)
{
    const char *s = *p;
    if (!s || !*s)
        return 0;
    const char *e = s;
    out->colon = out->dot = NULL;
    for (; *e && *e != ','; e++)
        if (*e == ':' && !out->colon)
            out->colon = e;
        else if (*e == '.' && out->colon)
            out->dot = e;
    out->text = s;
    out->len = (size_t)(e - s);
    *p = *e ? e + 1 : e;
    return 1;
}

/* The options in force; filled once by the constructor, read-only after. */
extern struct tg_options tg_opts;

/* Parse `text` (may be NULL or empty: all defaults) into *out.  Pure: no I/O,
 * no environment.  On error returns -1 and writes one line (no newline)
 * naming the problem and the valid choices into err; *out is then left with
 * defaults only, never half-configured.  String values are read-only
 * through these pointers: a default is the table's own text, any other value
 * a copy owned by *out (freed by tg_options_free); change one with
 * tg_options_set_string.  Valid options allocate only for a string value
 * that differs from its default, and call no strtol/snprintf (the
 * constructor runs this in every process: docs/benchmarks.md). */
int tg_options_parse(const char *text, struct tg_options *out, char *err, size_t errlen);
void tg_options_free(struct tg_options *o);

/* Copy s[0..n) into buf (size len), each control byte (below 0x20, 0x7f)
 * written as \xNN, cut with "..." where it does not fit: user text echoed
 * in a one-line message.  Returns buf.  Allocates nothing. */
const char *tg_options_escape(const char *s, size_t n, char *buf, size_t len);

/* Replace the string option at slot (&o->log_path, ...) by a copy of text
 * (no copy when text is the default).  0, or -1 when out of memory or slot
 * is no string option of *o (the old value then stays). */
int tg_options_set_string(struct tg_options *o, char **slot, const char *text);

/* Write the option table (help=1) to fd. */
void tg_options_print_help(int fd);

const char *tg_mode_name(int mode);

#endif
