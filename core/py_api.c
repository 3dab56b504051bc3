/* Resolution of the CPython API table.  See py_api.h.
 *
 * dlerror() is left as it was: a dlsym that fails sets the caller's pending
 * dlerror() message (a non-Python program would find "undefined symbol:
 * PySys_AddAuditHook" at the start of main), so a name is looked up with
 * dlsym only once the loaded objects' own symbol tables say it is defined
 * (sym_defined, which reads them in place: no lock of ours, no allocation,
 * no dlerror state). */
#include "core/py_api.h"
#include "core/startup.h"

#include "core/log.h"
#include "core/real_sym.h"

#include <dlfcn.h>
#include <pthread.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tg_py_api tg_py TG_STARTUP_DATA; /* written in every process (core/startup.h) */

/* ---- symbol tables of the loaded objects ------------------------------------- */

struct sym_query {
    const char *name;
    uint32_t gnu_hash;
    int found;          /* 1 defined, -1 undecidable (an object without DT_GNU_HASH) */
};

TG_STARTUP static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = h * 33 + *p;
    return h;
}

/* The dynamic section's addresses are relocated in place by ld.so on most
 * targets and left as link-time values on a few (and in the vDSO). */
TG_STARTUP static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return (const void *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
}

/* Is q->name defined (not an undefined reference) in this object?  The GNU
 * hash table: bloom word, bucket, then the chain of equal hashes. */
TG_STARTUP static int object_defines(const struct dl_phdr_info *info, const ElfW(Dyn) *dyn, const struct sym_query *q)
{
    const uint32_t *gh = NULL;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_GNU_HASH)
            gh = dyn_ptr(info, d->d_un.d_ptr);
        else if (d->d_tag == DT_SYMTAB)
            symtab = dyn_ptr(info, d->d_un.d_ptr);
        else if (d->d_tag == DT_STRTAB)
            strtab = dyn_ptr(info, d->d_un.d_ptr);
    }
    if (!symtab || !strtab)
        return 0;
    if (!gh)
        return -1;
    uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2], bloom_shift = gh[3];
    if (nbuckets == 0 || bloom_size == 0)
        return 0;
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gh + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    uint32_t h = q->gnu_hash;
    ElfW(Addr) word = bloom[(h / bits) % bloom_size];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> bloom_shift) % bits));
    if ((word & mask) != mask)
        return 0;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return 0;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((h | 1) == (h2 | 1)) {
            const ElfW(Sym) *s = &symtab[i];
            if (s->st_shndx != SHN_UNDEF && strcmp(strtab + s->st_name, q->name) == 0)
                return 1;
        }
        if (h2 & 1)
            return 0;
    }
}

TG_STARTUP static int query_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct sym_query *q = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        int r = object_defines(info, dyn, q);
        if (r > 0) {
            q->found = 1;
            return 1; /* stop: found */
        }
        if (r < 0)
            q->found = -1;
    }
    return 0;
}

/* Is name defined by a loaded object (where dlsym(RTLD_DEFAULT) looks)? */
TG_STARTUP static int sym_defined(const char *name)
{
    struct sym_query q = {name, gnu_hash(name), 0};
    dl_iterate_phdr(query_object, &q);
    return q.found != 0; /* undecidable: let dlsym answer (rare: no GNU hash) */
}

/* tg_real_sym(RTLD_DEFAULT, name) for a name that may be missing, dlerror() kept. */
TG_STARTUP static void *lookup(const char *name)
{
    return sym_defined(name) ? tg_real_sym(RTLD_DEFAULT, name) : NULL;
}

void *tg_py_symbol(const char *name)
{
    return lookup(name);
}

/* ---- the table ---------------------------------------------------------------- */

/* The names this file looks up, as text inside one object in RELRO
 * (TG_STARTUP_RODATA, core/startup.h): PySys_AddAuditHook is looked up in
 * every process the preload enters, the table at arming in every Python
 * process, target or not; neither then reads a page of .rodata.  One
 * member per name: names.PyErr_Clear is "PyErr_Clear". */
static const struct py_names {
#define TG_PYFN(req, when, ret, name, params) char name[sizeof #name];
#include "py_api.inc"
#undef TG_PYFN
    char Py_GetVersion[sizeof "Py_GetVersion"];
    char _Py_NoneStruct[sizeof "_Py_NoneStruct"];
    char free_threading[sizeof "free-threading"];
} names TG_STARTUP_RODATA = {
#define TG_PYFN(req, when, ret, name, params) #name,
#include "py_api.inc"
#undef TG_PYFN
    "Py_GetVersion",
    "_Py_NoneStruct",
    "free-threading",
};

TG_STARTUP int tg_py_present(void)
{
    return sym_defined(names.PySys_AddAuditHook);
}

TG_STARTUP int tg_py_version_parse(const char *v, int *minor, int *free_threaded)
{
    int m = -1;
    if (v && v[0] == '3' && v[1] == '.' && v[2] >= '0' && v[2] <= '9') {
        m = 0;
        for (const char *p = v + 2; *p >= '0' && *p <= '9' && m < 1000; p++)
            m = m * 10 + (*p - '0');
    }
    *minor = m;
    /* "3.13.0 experimental free-threading build (main, ...)" */
    *free_threaded = 0;
    size_t flen = sizeof names.free_threading - 1; /* strstr by hand: one import fewer */
    for (const char *p = v; p && *p && !*free_threaded; p++)
        *free_threaded = strncmp(p, names.free_threading, flen) == 0;
    if (*free_threaded)
        return m >= TG_PY_FT_MINOR_FIRST && m <= TG_PY_FT_MINOR_LAST ? 0 : -1;
    return m >= TG_PY_MINOR_FIRST && m <= TG_PY_MINOR_LAST ? 0 : -1;
}

TG_STARTUP int tg_py_resolve_hook(void)
{
    tg_py.PySys_AddAuditHook = lookup(names.PySys_AddAuditHook);
    if (!tg_py.PySys_AddAuditHook)
        return -1;
    /* Only Py_GetVersion exists on every version (Py_Version is 3.11+); it
     * returns a static string, callable before Py_Initialize. */
    const char *(*getv)(void) = (const char *(*)(void))lookup(names.Py_GetVersion);
    const char *v = getv ? getv() : NULL;
    tg_py.supported = tg_py_version_parse(v, &tg_py.minor, &tg_py.free_threaded) == 0;
    if (v) {
        size_t n = 0; /* up to the first space (strcspn: one more libc function) */
        while (v[n] && v[n] != ' ')
            n++;
        if (n >= sizeof tg_py.version)
            n = sizeof tg_py.version - 1;
        memcpy(tg_py.version, v, n);
        tg_py.version[n] = '\0';
    }
    return 0;
}

TG_STARTUP int tg_py_resolve_unsupported(void)
{
    static int done TG_STARTUP_DATA; /* 1 resolved, -1 not; a data race of equal stores at worst */
    if (!done) {
        tg_py.PyTuple_GetItem = lookup(names.PyTuple_GetItem);
        tg_py.PyUnicode_AsUTF8 = lookup(names.PyUnicode_AsUTF8);
        tg_py.PyErr_Clear = lookup(names.PyErr_Clear);
        done = tg_py.PyTuple_GetItem && tg_py.PyUnicode_AsUTF8 && tg_py.PyErr_Clear ? 1 : -1;
    }
    return done > 0 ? 0 : -1;
}

/* A required name is there on every version tg_py_resolve_hook accepted:
 * one dlsym each.  An optional one is looked for first.  Resolves the rows
 * of py_api.inc whose `when` is part; -1 at the first required one missing. */
/* The first required function a resolve_part did not find (for the line
 * that says why nothing is guarded). */
static const char *missing_fn;

/* Where each name of py_api.inc goes: offsets into names and tg_py, no
 * pointers (no relocations), in RELRO with names.  A loop over it instead
 * of one block of code per name: the loader's .text is in every process. */
#define TG_PYFN_A 'A'
#define TG_PYFN_G 'G'
static const struct py_row {
    unsigned short name, slot;
    char req, when;
} rows[] TG_STARTUP_RODATA = {
#define TG_PYFN(req, when, ret, name, params) \
    {offsetof(struct py_names, name), offsetof(struct tg_py_api, name), req, TG_PYFN_##when},
#include "py_api.inc"
#undef TG_PYFN
};
#undef TG_PYFN_A
#undef TG_PYFN_G

TG_STARTUP static int resolve_part(char part)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct py_row *r = &rows[i];
        if (r->when != part)
            continue;
        const char *n = (const char *)&names + r->name;
        void *p = r->req ? tg_real_sym(RTLD_DEFAULT, n) : lookup(n);
        memcpy((char *)&tg_py + r->slot, &p, sizeof p); /* a function pointer, as dlsym gives it */
        if (r->req && !p) {
            (void)dlerror(); /* a broken libpython: our failed lookup is not news */
            missing_fn = n;
            return -1;
        }
    }
    return 0;
}

/* Each part is resolved once (pthread_once): audit hooks run on whichever
 * thread raises the event, at once in a free-threaded build, and a caller
 * must see the whole table filled.  The once calls no Python (dlsym only),
 * so a second caller waits attached for microseconds. */
static int resolved_a TG_STARTUP_DATA, resolved_g; /* 1 resolved, -1 not; written in the once */

TG_STARTUP static void resolve_a_once(void)
{
    resolved_a = -1;
    if (!tg_py.PySys_AddAuditHook || !tg_py.supported || resolve_part('A') < 0)
        return;
    tg_py.none = (PyObject *)tg_real_sym(RTLD_DEFAULT, names._Py_NoneStruct);
    if (!tg_py.none) {
        (void)dlerror();
        return;
    }
    resolved_a = 1;
}

TG_STARTUP int tg_py_resolve(void)
{
    static pthread_once_t once TG_STARTUP_DATA = PTHREAD_ONCE_INIT;
    pthread_once(&once, resolve_a_once);
    return resolved_a > 0 ? 0 : -1;
}

static void resolve_g_once(void)
{
    int done = tg_py_resolve() == 0 && resolve_part('G') == 0 ? 1 : -1;
    PyObject **exc = done > 0 ? (PyObject **)tg_real_sym(RTLD_DEFAULT, "PyExc_Exception") : NULL;
    tg_py.exc_exception = exc ? *exc : NULL; /* tg_py_drop_error: without it, errors are cleared */
    if (!exc)
        (void)dlerror();
    tg_py.frame_type = done > 0 ? (PyObject *)tg_real_sym(RTLD_DEFAULT, "PyFrame_Type") : NULL;
    if (done > 0 && !tg_py.frame_type)
        (void)dlerror();
    if (done < 0) /* a target is being imported: where the program would have been guarded */
        tg__warn("this Python does not export %s, which tunerguard needs: its tuners run unguarded",
                 missing_fn ? missing_fn : "the functions of its C API");
    resolved_g = done;
}

int tg_py_resolve_guards(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, resolve_g_once);
    return resolved_g > 0 ? 0 : -1;
}
