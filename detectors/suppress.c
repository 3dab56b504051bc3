/* See suppress.h. */
#include "detectors/suppress.h"
#include "core/report_record.h"

#include <stdio.h>
#include <string.h>

/* '*'-glob over [p, pend) against the whole of [s, send): iterative, with
 * one backtrack point (the last '*'), O(|p| * |s|) worst case. */
static int glob(const char *p, const char *pend, const char *s, const char *send)
{
    const char *star = NULL, *retry = NULL;
    while (s < send) {
        if (p < pend && *p == '*') {
            star = ++p;
            retry = s;
        } else if (p < pend && *p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star;
            s = ++retry;
        } else {
            return 0;
        }
    }
    while (p < pend && *p == '*')
        p++;
    return p == pend;
}

int tg_supp_match(const char *pattern, const char *str)
{
    if (!pattern || !str || !pattern[0] || !str[0])
        return 0;
    /* Implicit '*' at both ends, unless anchored: glob "*pat*", "pat*",
     * "*pat" or "pat" against the whole string. */
    char buf[TG_SUPP_PATTERN + 4];
    size_t n = 0, len = strlen(pattern);
    const char *p = pattern;
    int head = p[0] == '^';
    int tail = len > (size_t)head && p[len - 1] == '$';
    if (head)
        p++, len--;
    if (tail)
        len--;
    if (len > TG_SUPP_PATTERN)
        len = TG_SUPP_PATTERN;
    if (!head)
        buf[n++] = '*';
    memcpy(buf + n, p, len);
    n += len;
    if (!tail)
        buf[n++] = '*';
    return glob(buf, buf + n, str, str + strlen(str));
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

int tg_supp_parse(struct tg_supp_set *set, const char *text, size_t len, char *err, size_t errlen)
{
    size_t i = 0;
    int line = 0;
    while (i < len) {
        size_t start = i;
        while (i < len && text[i] != '\n')
            i++;
        size_t end = i++;
        line++;
        while (start < end && is_space(text[start]))
            start++;
        /* A '#' at the start or after whitespace begins a comment to the end
         * of the line (TSan knows whole-line comments only; we also take
         * trailing ones, as the README's example has).  Elsewhere '#' is part
         * of the pattern: race:foo#bar. */
        for (size_t k = start; k < end; k++)
            if (text[k] == '#' && (k == start || is_space(text[k - 1]))) {
                end = k;
                break;
            }
        while (end > start && is_space(text[end - 1]))
            end--;
        if (start == end)
            continue;
        const char *colon = memchr(text + start, ':', end - start);
        if (!colon) {
            snprintf(err, errlen, "line %d: expected type:pattern, e.g. race:matmul_kernel, got '%.*s'", line,
                     (int)(end - start > 60 ? 60 : end - start), text + start);
            return -1;
        }
        size_t tlen = (size_t)(colon - (text + start));
        /* the types: the supp column of core/report_kinds.inc */
        int known = 0;
        char valid[128] = "";
        size_t vlen = 0;
        for (int k = 0; k < TG_REPORT_NKINDS; k++) {
            const char *t = tg_report_kinds[k].supp;
            int again = 0; /* a type several kinds take (an exception after a race: "race") is listed once */
            for (int j = 0; t && j < k && !again; j++)
                again = tg_report_kinds[j].supp && strcmp(tg_report_kinds[j].supp, t) == 0;
            if (!t || again)
                continue;
            known |= strlen(t) == tlen && memcmp(t, text + start, tlen) == 0;
            vlen += (size_t)snprintf(valid + vlen, vlen < sizeof valid ? sizeof valid - vlen : 0, "%s%s",
                                     vlen ? ", " : "", t);
        }
        if (!known) {
            snprintf(err, errlen, "line %d: unknown type '%.*s' (valid: %s)", line, (int)(tlen > 40 ? 40 : tlen),
                     text + start, valid);
            return -1;
        }
        const char *pat = colon + 1;
        size_t plen = (size_t)(text + end - pat);
        while (plen && is_space(*pat))
            pat++, plen--;
        if (plen == 0 || (plen == 1 && (*pat == '^' || *pat == '$')) || (plen == 2 && pat[0] == '^' && pat[1] == '$')) {
            snprintf(err, errlen, "line %d: empty pattern", line);
            return -1;
        }
        if (plen >= TG_SUPP_PATTERN) {
            snprintf(err, errlen, "line %d: pattern longer than %d bytes", line, TG_SUPP_PATTERN - 1);
            return -1;
        }
        if (memchr(pat, '\0', plen)) {
            snprintf(err, errlen, "line %d: NUL byte in pattern", line);
            return -1;
        }
        if (set->n == TG_SUPP_MAX) {
            snprintf(err, errlen, "more than %d suppressions", TG_SUPP_MAX);
            return -1;
        }
        struct tg_supp *s = &set->s[set->n++];
        memset(s, 0, sizeof *s);
        memcpy(s->type, text + start, tlen);
        memcpy(s->pattern, pat, plen);
        s->line = line;
    }
    return 0;
}

/* Bounded copy of a fixed-size report field (it may lack a NUL). */
static const char *field(char *buf, size_t n, const char *src, size_t srcn)
{
    size_t k = strnlen(src, srcn);
    if (k >= n)
        k = n - 1;
    memcpy(buf, src, k);
    buf[k] = '\0';
    return buf;
}

/* The file or the function (qualified name) of any Python frame of v. */
static int match_view(const char *pat, const struct tg_thread_view *v)
{
    char b[sizeof v->py[0].file + 1];
    int n = v->npy < TG_MAX_PY_FRAMES ? v->npy : TG_MAX_PY_FRAMES;
    for (int i = 0; i < n; i++)
        if (tg_supp_match(pat, field(b, sizeof b, v->py[i].file, sizeof v->py[i].file)) ||
            tg_supp_match(pat, field(b, sizeof b, v->py[i].func, sizeof v->py[i].func)))
            return 1;
    return 0;
}

const struct tg_supp *tg_supp_match_report(struct tg_supp_set *set, const struct tg_report *r)
{
    if (!set || !r || (unsigned)r->kind >= TG_REPORT_NKINDS || !tg_report_kinds[r->kind].supp)
        return NULL;
    const char *type = tg_report_kinds[r->kind].supp; /* "race", "interference" */
    char kernel[sizeof r->kernel + 1], cls[sizeof r->tuner_class + 1], method[sizeof r->method + 1];
    char cuda[sizeof r->itf.cuda_kernel + 1];
    field(kernel, sizeof kernel, r->kernel, sizeof r->kernel);
    field(cls, sizeof cls, r->tuner_class, sizeof r->tuner_class);
    field(method, sizeof method, r->method, sizeof r->method);
    field(cuda, sizeof cuda, r->itf.cuda_kernel, sizeof r->itf.cuda_kernel); /* "" for a race */
    for (int i = 0; i < set->n; i++) {
        struct tg_supp *s = &set->s[i];
        if (strcmp(s->type, type) != 0)
            continue;
        if (tg_supp_match(s->pattern, kernel) || tg_supp_match(s->pattern, cls) ||
            tg_supp_match(s->pattern, method) || (cuda[0] && tg_supp_match(s->pattern, cuda)) ||
            match_view(s->pattern, &r->entering) || match_view(s->pattern, &r->inside)) {
            /* atomic: an interference report without Python runs without the GIL */
            __atomic_fetch_add(&s->hits, 1, __ATOMIC_RELAXED);
            return s;
        }
    }
    return NULL;
}
