/* The py-spy --native merge over symbolized frames (mixed_stack.h).
 * Algorithm and lists from py-spy src/native_stack_trace.rs
 * (merge_native_stack, get_merge_strategy); notes/reports-and-cpython-api.md
 * §2.1. */
#include "reports/mixed_stack.h"

#include <string.h>

#include "reports/report_internal.h"

/* The module of "name+0xoff (module+0xoff)": the text after the last " (",
 * up to its last '+'.  Sets *mlen = 0 when there is none. */
static const char *sym_module(const char *s, size_t len, size_t *mlen)
{
    const char *open = NULL;
    for (size_t i = 0; i + 1 < len; i++)
        if (s[i] == ' ' && s[i + 1] == '(')
            open = s + i + 2;
    *mlen = 0;
    if (!open)
        return NULL;
    const char *end = s + len, *plus = NULL;
    for (const char *p = open; p < end && *p != ')'; p++)
        if (*p == '+')
            plus = p;
    if (!plus)
        return NULL;
    *mlen = (size_t)(plus - open);
    return open;
}

/* The function name of a symbolized frame: up to the last '+' before the
 * module's " (" ("??" and "0x..." are no names). */
static size_t sym_name_len(const char *s, size_t len)
{
    size_t cut = len;
    for (size_t i = 0; i + 1 < len; i++)
        if (s[i] == ' ' && s[i + 1] == '(')
            cut = i;
    size_t plus = cut;
    for (size_t i = 0; i < cut; i++)
        if (s[i] == '+')
            plus = i;
    return plus;
}

static int is_python_module(const char *m, size_t n)
{
    /* the basename: symbolize.c prints basenames, be safe with paths */
    for (size_t i = n; i > 0; i--)
        if (m[i - 1] == '/') {
            m += i;
            n -= i;
            break;
        }
    return (n >= 9 && memcmp(m, "libpython", 9) == 0) || (n >= 6 && memcmp(m, "python", 6) == 0);
}

/* The i-th token of name split on '_' and '.', empty tokens skipped. */
static int token(const char *s, size_t n, int which, const char **t, size_t *tl)
{
    size_t i = 0;
    for (int k = 0;; k++) {
        while (i < n && (s[i] == '_' || s[i] == '.'))
            i++;
        if (i >= n)
            return 0;
        size_t b = i;
        while (i < n && s[i] != '_' && s[i] != '.')
            i++;
        if (k == which) {
            *t = s + b;
            *tl = i - b;
            return 1;
        }
    }
}

static int tok_is(const char *t, size_t tl, const char *w)
{
    return strlen(w) == tl && memcmp(t, w, tl) == 0;
}

static int name_is(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(s, w, n) == 0;
}

enum tg_native_class tg_mixed_classify(const char *sym, size_t max)
{
    if (!sym || !sym[0])
        return TG_NATIVE_KEEP;
    size_t len = strnlen(sym, max);
    size_t nl = sym_name_len(sym, len);
    if (nl == 0 || (nl >= 2 && sym[0] == '0' && sym[1] == 'x') || (nl == 2 && sym[0] == '?'))
        return TG_NATIVE_KEEP;     /* unknown function: nothing to decide on */
    if (name_is(sym, nl, "__libc_start_main") || name_is(sym, nl, "__libc_start_call_main") ||
        name_is(sym, nl, "__clone") || name_is(sym, nl, "__clone3") ||
        name_is(sym, nl, "start_thread"))
        return TG_NATIVE_DROP;
    const char *t0, *t1;
    size_t l0, l1;
    if (!token(sym, nl, 0, &t0, &l0))
        return TG_NATIVE_KEEP;
    if (tok_is(t0, l0, "PyEval") && token(sym, nl, 1, &t1, &l1) &&
        (tok_is(t1, l1, "EvalFrameDefault") || tok_is(t1, l1, "EvalFrameEx")))
        return TG_NATIVE_EVAL;
    size_t ml;
    const char *mod = sym_module(sym, len, &ml);
    if (!mod || !is_python_module(mod, ml))
        return TG_NATIVE_KEEP;
    static const char *const allow[] = {"time", "sys", "gc", "os", "unicode", "thread",
                                        "stringio", "sre", "PyGILState", "PyThread", "lock"};
    for (size_t i = 0; i < sizeof allow / sizeof allow[0]; i++)
        if (tok_is(t0, l0, allow[i]))
            return TG_NATIVE_KEEP;
    return TG_NATIVE_DROP;
}

int tg_mixed_merge(const char *syms, size_t stride, size_t max, int nnative, int npy,
                   struct tg_mixed_frame *out, int outmax)
{
    int n = 0, neval = 0, seen = 0, p = 0;
    if (nnative < 0)
        nnative = 0;
    if (npy < 0)
        npy = 0;
    for (int i = 0; i < nnative; i++)
        neval += tg_mixed_classify(syms + (size_t)i * stride, max) == TG_NATIVE_EVAL;
#define TG__EMIT(k, idx)                                  \
    do {                                                  \
        if (n < outmax) {                                 \
            out[n].kind = (k);                            \
            out[n].index = (short)(idx);                  \
            n++;                                          \
        }                                                 \
    } while (0)
    for (int i = 0; i < nnative; i++) {
        switch (tg_mixed_classify(syms + (size_t)i * stride, max)) {
        case TG_NATIVE_KEEP:
            TG__EMIT(TG_MIXED_NATIVE, i);
            break;
        case TG_NATIVE_DROP:
            break;
        case TG_NATIVE_EVAL:
            if (++seen == neval)   /* the outermost: everything left */
                for (; p < npy; p++)
                    TG__EMIT(TG_MIXED_PYTHON, p);
            else if (p < npy)
                TG__EMIT(TG_MIXED_PYTHON, p++);
            break;
        }
    }
    if (neval == 0)
        for (; p < npy; p++)
            TG__EMIT(TG_MIXED_PYTHON, p);
#undef TG__EMIT
    return n;
}

int tg_mixed_view(const struct tg_thread_view *v, struct tg_mixed_frame *out, int outmax)
{
    const char *where;
    int n;
    tg__view_native(v, &n, &where);
    int npy = tg__npy(v);
    if (v->nsym <= 0 || n == 0 || npy == 0)
        return 0;
    if (n > v->nsym)
        n = v->nsym;
    return tg_mixed_merge(v->native_sym[0], TG_SYM_LEN, TG_SYM_LEN, n, npy, out, outmax);
}
