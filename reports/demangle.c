/* See reports/demangle.h. */
#include "reports/demangle.h"
#include "core/real_sym.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static demangle_fn found;   /* under mu; once found, kept */
static char *buf;           /* __cxa_demangle's, under mu: malloc'd, grown by it */
static size_t buf_len;

/* The process's __cxa_demangle: a global one, else libstdc++'s where a
 * library loaded it with RTLD_LOCAL (torch's extension modules do), asked
 * with RTLD_NOLOAD: never loaded here.  NULL when there is none.  Under mu. */
static demangle_fn lookup_locked(void)
{
    if (found)
        return found;
    found = (demangle_fn)tg_real_sym(RTLD_DEFAULT, "__cxa_demangle");
    if (!found) {
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
        if (h) /* kept open: the pointer stays good */
            found = (demangle_fn)tg_real_sym(h, "__cxa_demangle");
    }
    if (!found)
        (void)dlerror(); /* the failed look-ups leave the program no message of ours */
    return found;
}

int tg_demangle(const char *name, size_t max, char *out, size_t len)
{
    const size_t n = strnlen(name, max);
    if (n < 3 || name[0] != '_' || name[1] != 'Z' || len == 0)
        return 0;
    char mangled[512];
    if (n >= sizeof mangled)
        return 0; /* cut by its buffer, or absurdly long: as it is */
    memcpy(mangled, name, n);
    mangled[n] = '\0';
    int ok = 0;
    pthread_mutex_lock(&mu);
    demangle_fn dm = lookup_locked();
    if (dm) {
        int status = -1;
        size_t cap = buf_len;
        char *res = dm(mangled, buf, &cap, &status);
        if (res) { /* buf, grown by realloc, or the first one (buf NULL) */
            buf = res;
            buf_len = cap;
        }
        if (res && status == 0) {
            size_t k = strlen(res);
            if (k >= len)
                k = len - 1;
            memcpy(out, res, k);
            out[k] = '\0';
            ok = 1;
        }
    }
    pthread_mutex_unlock(&mu);
    return ok;
}

int tg_demangle_frame(const char *sym, size_t max, char *out, size_t len)
{
    const size_t n = strnlen(sym, max);
    size_t end = 0; /* NAME ends at its "+0x" offset, or at " (" without one */
    while (end < n && sym[end] != '+' && sym[end] != ' ')
        end++;
    size_t rest = n - end;
    if (rest + 4 > len || !tg_demangle(sym, end, out, len - rest))
        return 0;
    size_t k = strlen(out);
    if (k == len - rest - 1 && k >= 3) /* cut to fit: the offset and module kept whole */
        memcpy(out + k - 3, "...", 3);
    memcpy(out + k, sym + end, rest);
    out[k + rest] = '\0';
    return 1;
}
