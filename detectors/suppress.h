/* Suppressions (suppressions=FILE), in ThreadSanitizer's syntax:
 *
 *     # comment
 *     race:matmul_kernel          # kernel name
 *     race:^triton.runtime.autotuner.Autotuner$
 *     race:fla/modules/l2norm.py  # a file in either thread's Python stack
 *     race:^Model.forward$        # a function (qualified name) in either stack
 *     interference:matmul_kernel  # "tuning under load" reports of a kernel
 *
 * A '#' that starts a line or follows whitespace begins a comment to the end
 * of the line; elsewhere it is part of the pattern (race:foo#bar).  Leading
 * and trailing whitespace is not part of a pattern.
 *
 * A pattern matches a string when it occurs in it, '*' matching any run of
 * characters; '^' at the start anchors it to the start, '$' at the end to the
 * end.  A race report is suppressed when some pattern matches its kernel
 * name, its tuner class, its method (Autotuner.run), or the file or the
 * function (co_qualname on 3.11+, co_name before) of any Python frame of
 * either thread.  An interference report is suppressed by an
 * `interference:` line matching the same fields of the benchmarking thread
 * or the driver's name of the benchmarked kernel.
 *
 * Pure logic: no I/O, no allocation (a fixed table), no locks.  Parsing and
 * counting are not thread-safe: parse before threads exist (constructor),
 * match with the GIL held (reports are emitted under it). */
#ifndef TG_SUPPRESS_H
#define TG_SUPPRESS_H

#include <stddef.h>
#include <stdint.h>

struct tg_report;

#define TG_SUPP_MAX 256
#define TG_SUPP_PATTERN 256

struct tg_supp {
    char type[16];                 /* "race" or "interference" */
    char pattern[TG_SUPP_PATTERN];
    int line;                      /* in the file, 1-based */
    uint64_t hits;
};

struct tg_supp_set {
    int n;
    struct tg_supp s[TG_SUPP_MAX];
};

/* Does `pattern` (TSan template syntax above) match `str`?  An empty
 * pattern or string never matches. */
int tg_supp_match(const char *pattern, const char *str);

/* Parse the text of a suppressions file (len bytes, NUL not required) into
 * *set (appending).  Returns 0, or -1 with one line (no newline) in err:
 * "line 3: unknown type 'foo' (valid: race, interference)", "line 4: expected
 * type:pattern", "line 5: empty pattern", "line 6: pattern longer than 255
 * bytes", "more than 256 suppressions". */
int tg_supp_parse(struct tg_supp_set *set, const char *text, size_t len, char *err, size_t errlen);

/* The first suppression that matches race report r, its hit count
 * incremented; NULL when none does (or r is not a race). */
const struct tg_supp *tg_supp_match_report(struct tg_supp_set *set, const struct tg_report *r);

#endif
